package egressnet

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/strslice"
)

// Limits of the proxy container.
const (
	proxyPids   = 256
	proxyMemory = 256 << 20
)

// ProxySpec says how to make a sandbox's proxy container.
type ProxySpec struct {
	// Sandbox is the sandbox's name.
	Sandbox string
	// Image is the image to run (the sandbox's own, present locally).
	Image string
	// SidecarHost is the host path of podbot-sidecar, mounted read-only at
	// SidecarTarget.
	SidecarHost, SidecarTarget string
	// Dirs are the policy and log directories.
	Dirs Dirs
	// UpstreamCA is a host PEM bundle the proxy trusts besides the system
	// roots; empty adds none. It is mounted read-only at UpstreamCATarget.
	UpstreamCA string
	// Vault, when set, mounts Dirs.Vault read-only at VaultDirTarget and
	// starts the proxy with the credential vault (--secrets, --ca-cert,
	// --ca-key).
	Vault bool
	// Labels are extra labels (the version, the managed flag).
	Labels map[string]string
}

// UpstreamCATarget is where network.upstream_ca appears in the proxy.
const UpstreamCATarget = "/etc/podbot-egress-ca/upstream.pem"

// ProxyCommand is the proxy container's command.
func (s ProxySpec) ProxyCommand() []string {
	cmd := []string{s.SidecarTarget, "egress",
		"--listen", "0.0.0.0:" + strconv.Itoa(ProxyPort),
		"--policy", PolicyDirTarget + "/" + PolicyFile,
		"--log", LogDirTarget + "/" + LogFile,
		"--loaded", LogDirTarget + "/" + LoadedFile}
	if s.UpstreamCA != "" {
		cmd = append(cmd, "--upstream-ca", UpstreamCATarget)
	}
	if s.Vault {
		cmd = append(cmd, "--secrets", VaultDirTarget+"/"+SecretsFile,
			"--ca-cert", VaultDirTarget+"/"+CACertFile, "--ca-key", VaultDirTarget+"/"+CAKeyFile)
	}
	return cmd
}

// Render returns the proxy container's Engine API bodies. It starts on the
// engine's default bridge (its way out); the caller connects it to the
// internal network under ProxyAlias. It is hardened like every podbot
// container: no capabilities, no-new-privileges, read-only root, a
// non-root user, pids and memory limits.
func (s ProxySpec) Render() (*container.Config, *container.HostConfig, *network.NetworkingConfig) {
	labels := map[string]string{LabelSandbox: s.Sandbox, LabelRole: RoleProxy}
	for k, v := range s.Labels {
		labels[k] = v
	}
	cfg := &container.Config{
		Image:      s.Image,
		Entrypoint: strslice.StrSlice{s.SidecarTarget},
		Cmd:        strslice.StrSlice(s.ProxyCommand()[1:]),
		User:       ProxyOwner(),
		Labels:     labels,
		WorkingDir: "/",
	}
	pids := int64(proxyPids)
	ro := func(src, dst string, readOnly bool) mount.Mount {
		return mount.Mount{Type: mount.TypeBind, Source: src, Target: dst, ReadOnly: readOnly,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}}
	}
	hc := &container.HostConfig{
		NetworkMode:    "bridge",
		CapDrop:        strslice.StrSlice{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		ReadonlyRootfs: true,
		Resources:      container.Resources{PidsLimit: &pids, Memory: proxyMemory},
		Tmpfs:          map[string]string{"/tmp": "rw,noexec,nosuid,nodev,size=16m"},
		Mounts: []mount.Mount{
			ro(s.SidecarHost, s.SidecarTarget, true),
			ro(s.Dirs.Policy, PolicyDirTarget, true),
			ro(s.Dirs.Log, LogDirTarget, false),
		},
	}
	if s.UpstreamCA != "" {
		hc.Mounts = append(hc.Mounts, ro(s.UpstreamCA, UpstreamCATarget, true))
	}
	if s.Vault {
		hc.Mounts = append(hc.Mounts, ro(s.Dirs.Vault, VaultDirTarget, true))
	}
	return cfg, hc, &network.NetworkingConfig{}
}

// NetlockSpec is the one-shot helper that closes a sandbox's network
// namespace: it joins the sandbox's namespace with CAP_NET_ADMIN alone,
// deletes the default route and prohibits the internal network's gateway
// (the engine host, whose own services and DNS forwarder answer there).
type NetlockSpec struct {
	// SandboxID is the sandbox container whose network namespace to join.
	SandboxID string
	// Image is the image to run; SidecarHost/SidecarTarget as in ProxySpec.
	Image, SidecarHost, SidecarTarget string
	// Block are the addresses to prohibit (the network's gateways).
	Block []netip.Addr
	// Labels are the helper's labels.
	Labels map[string]string
}

// Render returns the helper's Engine API bodies.
func (s NetlockSpec) Render() (*container.Config, *container.HostConfig, *network.NetworkingConfig) {
	cmd := []string{"netlock"}
	for _, a := range s.Block {
		cmd = append(cmd, "--block", a.String())
	}
	pids := int64(16)
	cfg := &container.Config{
		Image:      s.Image,
		Entrypoint: strslice.StrSlice{s.SidecarTarget},
		Cmd:        strslice.StrSlice(cmd),
		User:       "0",
		Labels:     s.Labels,
		WorkingDir: "/",
	}
	hc := &container.HostConfig{
		NetworkMode:    container.NetworkMode("container:" + s.SandboxID),
		CapDrop:        strslice.StrSlice{"ALL"},
		CapAdd:         strslice.StrSlice{"NET_ADMIN"},
		SecurityOpt:    []string{"no-new-privileges"},
		ReadonlyRootfs: true,
		Resources:      container.Resources{PidsLimit: &pids, Memory: 64 << 20},
		Mounts: []mount.Mount{{Type: mount.TypeBind, Source: s.SidecarHost, Target: s.SidecarTarget, ReadOnly: true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}}},
	}
	return cfg, hc, &network.NetworkingConfig{}
}

// SandboxEnv is the proxy environment of an allowlist sandbox whose proxy
// listens at addr: ordinary tools send their traffic through it. It is not
// a secret and goes into the container's configuration.
func SandboxEnv(addr netip.Addr) []string {
	u := fmt.Sprintf("http://%s:%d", addr, ProxyPort)
	return []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u,
		"NO_PROXY=localhost,127.0.0.1", "no_proxy=localhost,127.0.0.1"}
}

// SandboxSysctls turn IPv6 off in an allowlist sandbox: the internal
// network is IPv4, and a link-local IPv6 address would reach the engine
// host's own services past the IPv4 routes netlock closes.
func SandboxSysctls() map[string]string {
	return map[string]string{"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"}
}

// SandboxDNS is the resolver an allowlist sandbox is given: its own
// loopback, where nothing answers. The proxy resolves names itself; the
// sandbox resolves none (no DNS channel out).
var SandboxDNS = []string{"127.0.0.1"}
