package podbot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// StepNetwork is the launch step that makes an allowlist sandbox's
// internal network and egress proxy, and closes the sandbox's network
// namespace after it starts.
const StepNetwork = "network"

// LabelEgressDir, on an allowlist sandbox, is the host directory of its
// egress policy and log, so rm and prune find it without a runtime dir.
const LabelEgressDir = "podbot.egress.dir"

// egressSetup is what egress preparation made for one sandbox, in the order
// it made it; teardown removes it in reverse.
type egressSetup struct {
	name      string
	dirs      egressnet.Dirs
	networkID string
	proxyID   string
	proxyAddr netip.Addr
	gateways  []netip.Addr
	sidecar   string
}

// applyEgressMode sets the plan's network for its egress mode: none gives
// the sandbox no network; open and the empty mode leave it as it is.
func applyEgressMode(plan *launchplan.Plan) {
	switch plan.Egress.Mode {
	case egress.ModeNone:
		plan.Network = "none"
	case egress.ModeOpen, egress.ModeAllowlist:
		if plan.Labels != nil {
			plan.Labels[egressnet.LabelMode] = string(plan.Egress.Mode)
		}
	}
}

// prepareEgress makes an allowlist sandbox's egress plumbing: the policy
// and log directories with the policy file, the internal network
// podbot-net-<name>, and the running proxy container attached to the
// engine's bridge and to that network. It points the plan at the network
// and at the proxy. On failure it removes what it made.
//
// With a vault (v non-nil) it also writes the vault's files into the
// egress directory for the proxy alone and starts the proxy with them, and
// mounts the (still empty) trust directory read-only at VaultTrustDir in
// the sandbox.
func prepareEgress(ctx context.Context, conn *engine.Conn, plan *launchplan.Plan, sidecar, runtimeDir string, v *vault) (es *egressSetup, err error) {
	if err := checkLockable(*plan); err != nil {
		return nil, err
	}
	if sidecar == "" {
		return nil, &errdefs.ConfigError{Key: "network.mode", Reason: errdefs.ErrMissingRequired,
			Msg: "allowlist mode runs the egress proxy from podbot-sidecar; install podbot-sidecar next to podbot or set PODBOT_SIDECAR_PATH"}
	}
	dirs, err := egressnet.DirsFor(runtimeDir, plan.Name)
	if err != nil {
		return nil, err
	}
	es = &egressSetup{name: plan.Name, dirs: dirs, sidecar: sidecar}
	defer func() {
		if err != nil {
			cctx, cancel := engine.CleanupContext(ctx)
			defer cancel()
			if terr := es.teardown(cctx, conn); terr != nil {
				err = errors.Join(err, terr)
			}
		}
	}()
	if err := dirs.Make(); err != nil {
		return es, err
	}
	if err := dirs.Mark(conn.Endpoint().String()); err != nil {
		return es, err
	}
	if v != nil {
		if err := writeVault(dirs, v); err != nil {
			return es, err
		}
		// The sandbox's trust files live on the host, mounted read-only:
		// installVaultTrust fills the directory once the sandbox exists.
		if err := plan.Apply(launchplan.WithTrustMount(dirs.Trust, VaultTrustDir)); err != nil {
			return es, err
		}
	}
	pol := plan.Egress.Policy
	if err := egressnet.WritePolicy(dirs.PolicyPath(), &pol); err != nil {
		return es, err
	}
	labels := map[string]string{launchplan.LabelManaged: "true", egressnet.LabelSandbox: plan.Name,
		egressnet.LabelRole: egressnet.RoleNetwork}
	internal, err := internalNetworks(ctx, conn)
	if err != nil {
		return es, err
	}
	es.networkID, err = conn.CreateNetwork(ctx, egressnet.NetworkName(plan.Name), engine.NetworkOptions{Internal: internal, Labels: labels})
	if err != nil {
		return es, err
	}
	info, err := conn.InspectNetwork(ctx, es.networkID)
	if err != nil {
		return es, err
	}
	es.gateways = info.Gateways
	if len(es.gateways) == 0 {
		// Without the gateway netlock could not keep the sandbox away from
		// the engine host: refuse rather than run open.
		return es, &errdefs.ContainerError{Op: "inspect network", Endpoint: conn.Endpoint().String(), Container: info.Name,
			Reason: errdefs.ErrUnsupported, Msg: "the engine reported no gateway for the internal network"}
	}
	spec := egressnet.ProxySpec{Sandbox: plan.Name, Image: plan.Image, SidecarHost: sidecar, SidecarTarget: SidecarTarget,
		Dirs: dirs, UpstreamCA: plan.Egress.UpstreamCA, Vault: v != nil, Labels: map[string]string{"podbot.version": Version}}
	cfg, hc, nc := spec.Render()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()
	es.proxyID, err = conn.Create(dctx, egressnet.ProxyName(plan.Name), cfg, hc, nc)
	if err != nil {
		return es, err
	}
	// A fixed address keeps the proxy where the sandbox's HTTP_PROXY points
	// across restarts (Podman's IPAM hands out the next free address
	// otherwise). dockerd refuses fixed addresses on networks without a
	// configured subnet, but gives a restarted container its old address.
	ep := engine.EndpointOptions{Aliases: []string{egressnet.ProxyAlias}, IPv4: es.gateways[0].Next()}
	if err := conn.ConnectNetwork(dctx, es.networkID, es.proxyID, ep); err != nil {
		ep.IPv4 = netip.Addr{}
		if err := conn.ConnectNetwork(dctx, es.networkID, es.proxyID, ep); err != nil {
			return es, err
		}
	}
	if err := conn.Start(dctx, es.proxyID); err != nil {
		return es, err
	}
	es.proxyAddr, err = proxyAddress(dctx, conn, es.proxyID, egressnet.NetworkName(plan.Name))
	if err != nil {
		return es, err
	}
	plan.Network = egressnet.NetworkName(plan.Name)
	plan.Env = append(plan.Env, egressnet.SandboxEnv(es.proxyAddr)...)
	if plan.Labels == nil {
		plan.Labels = map[string]string{}
	}
	plan.Labels[egressnet.LabelProxyAddr] = es.proxyAddr.String()
	plan.Labels[LabelEgressDir] = dirs.Root
	plan.Labels[egressnet.LabelName] = plan.Name
	return es, ctx.Err()
}

// egressNameOf is the name sandbox c's egress proxy, internal network and
// egress directory are named after: its egressnet.LabelName (a claimed
// pool member keeps its member name's), else its container name. A label
// that cannot name them is ignored.
func egressNameOf(c Container) string {
	if n := c.Labels[egressnet.LabelName]; n != "" && n != c.Name && validEgressName(n) {
		return n
	}
	return c.Name
}

// validEgressName reports whether n can be a container name, and so one
// directory under the egress root.
func validEgressName(n string) bool {
	if n == "" || len(n) > 253 {
		return false
	}
	for i, r := range n {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || (i > 0 && (r == '_' || r == '.' || r == '-'))
		if !ok {
			return false
		}
	}
	return true
}

// internalNetworks says whether the sandbox's network is made Internal on
// this engine. dockerd: yes; its internal bridge carries traffic between
// its containers and drops the rest. Podman (netavark): no. netavark adds
// no forwarding rule for an internal network, so on a host where
// br_netfilter passes bridged frames through iptables and the FORWARD
// policy is DROP (what dockerd sets up), the sandbox cannot even reach its
// proxy on the same bridge. There the network is an ordinary one and the
// sandbox's way out is closed in its own namespace by netlock alone: no
// default route, the gateway prohibited, and no CAP_NET_ADMIN or
// CAP_NET_RAW to change that or to forge frames (checkLockable).
func internalNetworks(ctx context.Context, conn *engine.Conn) (bool, error) {
	info, err := conn.Info(ctx)
	if err != nil {
		return false, err
	}
	return info.Kind != engine.KindPodman, nil
}

// checkLockable refuses an allowlist plan whose sandbox could undo netlock
// or go around it: the privileged profile, or NET_ADMIN (routes) or
// NET_RAW (hand-made frames to the gateway) among its capabilities.
func checkLockable(plan launchplan.Plan) error {
	if plan.Security.Privileged {
		return &errdefs.ConfigError{Key: "network.mode", Reason: errdefs.ErrConflict,
			Msg: "network.mode = \"allowlist\" cannot contain a privileged sandbox (sandbox.privileged = true): it could change its own routes and leave the internal network; use network.mode = \"open\" or \"none\", or the minimal profile"}
	}
	for _, c := range plan.Security.CapAdd {
		if c == "NET_ADMIN" || c == "NET_RAW" {
			return &errdefs.ConfigError{Key: "sandbox.cap_add", Reason: errdefs.ErrConflict,
				Msg: "CAP_" + c + " would let an allowlist sandbox change its routes or forge frames past its egress proxy; drop it, or use network.mode = \"open\""}
		}
	}
	return nil
}

// proxyStartWait is how long a started proxy has to stay up before the
// launch trusts it.
const proxyStartWait = 300 * time.Millisecond

// proxyAddress checks that the proxy runs and returns its address on the
// internal network. A proxy that exited is an error quoting its last log
// lines.
func proxyAddress(ctx context.Context, conn *engine.Conn, id, network string) (netip.Addr, error) {
	select {
	case <-time.After(proxyStartWait):
	case <-ctx.Done():
		return netip.Addr{}, ctx.Err()
	}
	in, err := conn.Inspect(ctx, id, false)
	if err != nil {
		return netip.Addr{}, err
	}
	if in.State == nil || !in.State.Running {
		var out bytes.Buffer
		lb := &limitedBuffer{buf: &out, max: maxStepOutput}
		_ = conn.Logs(ctx, id, engine.LogsOptions{Tail: 5}, lb, lb)
		return netip.Addr{}, &errdefs.ContainerError{Op: "start egress proxy", Endpoint: conn.Endpoint().String(), Container: egressName(in),
			Reason: errdefs.ErrExecFailed, Msg: "the egress proxy exited: " + lastLines(out.String(), 5),
			Hint: "check that podbot-sidecar is the same version as podbot (it must have the egress command)"}
	}
	if in.NetworkSettings != nil {
		if ep, ok := in.NetworkSettings.Networks[network]; ok && ep != nil {
			if a, err := netip.ParseAddr(ep.IPAddress); err == nil {
				return a, nil
			}
		}
	}
	return netip.Addr{}, &errdefs.ContainerError{Op: "start egress proxy", Endpoint: conn.Endpoint().String(), Container: egressName(in),
		Reason: errdefs.ErrUnavailable, Msg: "the egress proxy has no address on " + network}
}

func egressName(in container.InspectResponse) string {
	if in.ContainerJSONBase != nil {
		return in.Name
	}
	return ""
}

// lockNetwork runs the netlock helper in the sandbox's network namespace:
// the default route goes, the internal network's gateway (the engine
// host) is prohibited. It waits for the helper's exit and removes it.
func lockNetwork(ctx context.Context, conn *engine.Conn, sandboxID, image, sidecar string, gateways []netip.Addr) error {
	spec := egressnet.NetlockSpec{SandboxID: sandboxID, Image: image, SidecarHost: sidecar, SidecarTarget: SidecarTarget,
		Block: gateways, Labels: map[string]string{egressnet.LabelRole: "netlock"}}
	cfg, hc, nc := spec.Render()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()
	id, err := conn.Create(dctx, "", cfg, hc, nc)
	if err != nil {
		return err
	}
	defer func() {
		cctx, ccancel := engine.CleanupContext(ctx)
		defer ccancel()
		_ = conn.Remove(cctx, id, true)
	}()
	ch, err := conn.StartAndWait(dctx, id)
	if err != nil {
		return err
	}
	var st engine.ExitStatus
	select {
	case st = <-ch:
	case <-dctx.Done():
		return dctx.Err()
	}
	if st.Err != nil {
		return st.Err
	}
	if st.Code != 0 {
		var out bytes.Buffer
		lb := &limitedBuffer{buf: &out, max: maxStepOutput}
		_ = conn.Logs(dctx, id, engine.LogsOptions{Tail: 5}, lb, lb)
		return &errdefs.ContainerError{Op: "netlock", Endpoint: conn.Endpoint().String(), Container: sandboxID,
			Reason: errdefs.ErrExecFailed, Msg: fmt.Sprintf("closing the sandbox's network failed (status %d): %s", st.Code, lastLines(out.String(), 3))}
	}
	return nil
}

// claimedEgress is the egress plumbing of a claimed pool member, from its
// labels: named after the member (egressnet.LabelName), its directory the
// one LabelEgressDir records when that has the shape podbot gives it
// (…/egress/<member>).
func claimedEgress(labels map[string]string) (*egressSetup, error) {
	name, root := labels[egressnet.LabelName], labels[LabelEgressDir]
	if !validEgressName(name) || !filepath.IsAbs(root) || filepath.Clean(root) != root ||
		filepath.Base(root) != name || filepath.Base(filepath.Dir(root)) != "egress" {
		return nil, &errdefs.ContainerError{Op: "claim pool member", Container: name, Reason: errdefs.ErrInvalidValue,
			Msg: "the member does not record its egress proxy and directory (labels " + egressnet.LabelName + ", " + LabelEgressDir + "); remove and refill the pool"}
	}
	return &egressSetup{name: name, dirs: egressnet.DirsAt(root)}, nil
}

// teardown removes the proxy, the network and the directories. Missing
// pieces are fine.
func (es *egressSetup) teardown(ctx context.Context, conn *engine.Conn) error {
	if es == nil {
		return nil
	}
	return removeEgress(ctx, conn, es.name, es.dirs.Root)
}

// removeEgress removes sandbox name's proxy container, internal network and
// egress directory (dir; empty skips it). Missing pieces are fine.
func removeEgress(ctx context.Context, conn *engine.Conn, name, dir string) error {
	var errs []error
	if err := conn.Remove(ctx, egressnet.ProxyName(name), true); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		errs = append(errs, err)
	}
	if err := conn.RemoveNetwork(ctx, egressnet.NetworkName(name)); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		errs = append(errs, err)
	}
	if dir != "" {
		if err := (egressnet.Dirs{Root: dir}).Remove(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sandboxHostConfig adds an allowlist sandbox's resolver and sysctls to its
// host config: no usable resolver (the proxy resolves names), no IPv6.
func sandboxHostConfig(plan launchplan.Plan, hc *container.HostConfig) {
	if plan.Egress.Mode != egress.ModeAllowlist {
		return
	}
	hc.DNS = append([]string(nil), egressnet.SandboxDNS...)
	if hc.Sysctls == nil {
		hc.Sysctls = map[string]string{}
	}
	for k, v := range egressnet.SandboxSysctls() {
		hc.Sysctls[k] = v
	}
}
