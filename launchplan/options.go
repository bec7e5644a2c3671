package launchplan

import (
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// Option is one hardening or layout control applied to a Plan. Options are
// small and independent; each validates its own input.
type Option func(*Plan) error

// Limits and fixed values used by the options.
const (
	// TokenMountTarget is where the GitHub token directory appears in the
	// container; the token itself is TokenMountTarget/ghapp_token.
	TokenMountTarget = "/run/secrets"
	// TokenFileName is the file name the token daemon writes and the askpass
	// helper reads.
	TokenFileName = "ghapp_token"
	// TmpfsTmpOptions are the mount options of the tmpfs /tmp that comes with
	// a read-only root filesystem.
	TmpfsTmpOptions = "rw,nosuid,nodev,size=256m"
	// MinMemoryBytes is the smallest memory limit the engines accept (6 MiB).
	MinMemoryBytes = 6 << 20
	// MinNanoCPUs is the smallest CPU limit the engines accept (0.01 CPU).
	MinNanoCPUs = 10_000_000
	fuseDevice  = "/dev/fuse"
)

// WithNoNewPrivileges sets no-new-privileges: setuid binaries and file
// capabilities can no longer raise the privileges of processes in the container.
func WithNoNewPrivileges() Option {
	return func(p *Plan) error {
		p.Security.NoNewPrivileges = true
		return nil
	}
}

// WithCapDropAll drops every capability and keeps only the named ones (with
// or without CAP_ prefix), merged with any already kept.
func WithCapDropAll(keep ...string) Option {
	return func(p *Plan) error {
		caps, err := mergeCapabilities(p.Security.CapAdd, keep...)
		if err != nil {
			return err
		}
		p.Security.CapDropAll = true
		p.Security.CapAdd = caps
		return nil
	}
}

// WithPidsLimit caps the number of processes; 0 removes the limit.
func WithPidsLimit(n int64) Option {
	return func(p *Plan) error {
		if n < 0 {
			return configError("sandbox.pids_limit", errdefs.ErrInvalidValue,
				"pids limit %d must be positive (or 0 for no limit)", n)
		}
		p.Resources.PidsLimit = n
		return nil
	}
}

// WithMemory caps memory in bytes; 0 removes the limit.
func WithMemory(bytes int64) Option {
	return func(p *Plan) error {
		if bytes < 0 || (bytes > 0 && bytes < MinMemoryBytes) {
			return configError("sandbox.memory", errdefs.ErrInvalidValue,
				"memory limit %d bytes must be at least %d (6 MiB), or 0 for no limit", bytes, MinMemoryBytes)
		}
		p.Resources.MemoryBytes = bytes
		return nil
	}
}

// WithCPUs caps CPU time in units of 1e-9 CPUs (1e9 is one CPU); 0 removes
// the limit. The engine refuses more CPUs than the host has.
func WithCPUs(nano int64) Option {
	return func(p *Plan) error {
		if nano < 0 || (nano > 0 && nano < MinNanoCPUs) {
			return configError("sandbox.cpus", errdefs.ErrInvalidValue,
				"CPU limit %d nano-CPUs must be at least %d (0.01 CPU), or 0 for no limit", nano, MinNanoCPUs)
		}
		p.Resources.NanoCPUs = nano
		return nil
	}
}

var networkName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$`)

// WithNetwork sets the network mode: none, bridge, default, or a user-defined
// network name; empty selects the engine's default network. host and
// container:<id> are refused: they would share a namespace that reaches the
// host's loopback services and abstract sockets.
func WithNetwork(mode string) Option {
	return func(p *Plan) error {
		switch {
		case mode == "" || mode == "default":
			p.Network = ""
		case mode == "host" || strings.HasPrefix(mode, "container:") || strings.HasPrefix(mode, "ns:"):
			return configError("sandbox.network", errdefs.ErrRefused,
				"network %q would share a namespace with the host or another container; use none, bridge or a named network", mode)
		case !networkName.MatchString(mode):
			return configError("sandbox.network", errdefs.ErrInvalidValue,
				"network %q is not none, bridge, default or a valid network name", mode)
		default:
			p.Network = mode
		}
		return nil
	}
}

// WithReadOnlyRootfs makes the root filesystem read-only and mounts a tmpfs
// at /tmp (TmpfsTmpOptions) so programs still have scratch space.
func WithReadOnlyRootfs() Option {
	return func(p *Plan) error {
		p.Security.ReadOnlyRootfs = true
		if p.Tmpfs == nil {
			p.Tmpfs = map[string]string{}
		}
		p.Tmpfs["/tmp"] = TmpfsTmpOptions
		return nil
	}
}

// WithPrivileged selects the privileged profile: the container runs
// privileged and nothing else of the minimal profile applies (no capability
// list, no device mappings, no SELinux option), because the engine grants
// every capability and device and governs labelling itself. Engines that
// cannot start privileged containers (dockerd on hosts whose bounding set
// lacks a capability) fail at create time.
func WithPrivileged() Option {
	return func(p *Plan) error {
		p.Security.Privileged = true
		p.Security.CapDropAll = false
		p.Security.CapAdd = nil
		p.Security.Devices = nil
		p.Security.LabelDisable = false
		return nil
	}
}

// WithMinimalProfile selects the minimal (unprivileged) profile. With
// mountDevFuse it maps /dev/fuse (rwm) and keeps SYS_ADMIN so fuse-overlayfs
// works for a nested Podman. labelMode disable_for_container (or empty) adds
// label=disable; keep_default leaves the engine's SELinux labelling alone.
func WithMinimalProfile(mountDevFuse bool, labelMode SELinuxLabelMode) Option {
	return func(p *Plan) error {
		if p.Security.Privileged {
			return configError("sandbox.privileged", errdefs.ErrConflict,
				"the minimal profile cannot be applied to a privileged plan")
		}
		switch labelMode {
		case "", SELinuxDisableForContainer:
			p.Security.LabelDisable = true
		case SELinuxKeepDefault:
			p.Security.LabelDisable = false
		default:
			return configError("sandbox.selinux_label_mode", errdefs.ErrInvalidValue,
				"%q is not a SELinux label mode; use disable_for_container or keep_default", labelMode)
		}
		if !mountDevFuse {
			return nil
		}
		caps, err := mergeCapabilities(p.Security.CapAdd, "SYS_ADMIN")
		if err != nil {
			return err
		}
		p.Security.CapAdd = caps
		for _, d := range p.Security.Devices {
			if d.ContainerPath == fuseDevice {
				return nil
			}
		}
		p.Security.Devices = append(p.Security.Devices, Device{HostPath: fuseDevice, ContainerPath: fuseDevice, Permissions: "rwm"})
		return nil
	}
}

// cdiName matches a fully qualified CDI device name: vendor/class=name.
var cdiName = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?/[a-zA-Z0-9]([a-zA-Z0-9_.-]*[a-zA-Z0-9])?=[a-zA-Z0-9][a-zA-Z0-9_.:-]*$`)

// WithGPUs requests devices by CDI name (for example nvidia.com/gpu=all). The
// host needs a CDI specification for them (nvidia-ctk cdi generate).
func WithGPUs(names ...string) Option {
	return func(p *Plan) error {
		for _, n := range names {
			if !cdiName.MatchString(n) {
				return configError("sandbox.gpus", errdefs.ErrInvalidValue,
					"%q is not a CDI device name of the form vendor/class=name (for example nvidia.com/gpu=all)", n)
			}
			p.Security.GPUs = append(p.Security.GPUs, n)
		}
		return nil
	}
}

// LabelPrefix is the prefix of the labels podbot reserves for itself.
const LabelPrefix = "podbot."

// WithLabels adds labels. Keys under podbot. are reserved and refused; keys
// must be non-empty without '=' or control characters.
func WithLabels(labels map[string]string) Option {
	return func(p *Plan) error {
		for k, v := range labels {
			switch {
			case k == "" || len(k) > 256 || strings.ContainsRune(k, '=') || hasControl(k):
				return configError("labels", errdefs.ErrInvalidValue,
					"label key %q must be 1-256 characters without '=' or control characters", k)
			case strings.HasPrefix(k, LabelPrefix):
				return configError("labels", errdefs.ErrRefused,
					"label key %q is reserved for podbot; choose a key outside %s", k, LabelPrefix)
			case len(v) > 4096 || strings.ContainsRune(v, 0):
				return configError("labels", errdefs.ErrInvalidValue,
					"label %q has a value longer than 4096 bytes or containing NUL", k)
			}
		}
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		maps.Copy(p.Labels, labels)
		return nil
	}
}

// WithTokenMount mounts the directory holding the GitHub token file read-only
// at /run/secrets, so the token is /run/secrets/ghapp_token. The directory is
// mounted rather than the file because the token daemon replaces the file by
// atomic rename, and a bind-mounted file would keep showing the old inode.
// The host path must be canonical and end in ghapp_token. The container is
// labelled LabelGitHubToken=true so podbot token-daemon can find it.
func WithTokenMount(hostFile string) Option {
	return func(p *Plan) error {
		if err := checkHostPath("token_file", hostFile); err != nil {
			return err
		}
		if filepath.Base(hostFile) != TokenFileName {
			return configError("token_file", errdefs.ErrInvalidValue,
				"token file %q must be named %s", hostFile, TokenFileName)
		}
		if err := addMount(p, Mount{Source: filepath.Dir(hostFile), Target: TokenMountTarget, ReadOnly: true, Origin: "token_file"}); err != nil {
			return err
		}
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[LabelGitHubToken] = "true"
		return nil
	}
}

// WithTrustMount bind-mounts the canonical host directory hostDir
// read-only at target: the credential vault's trust files (the sandbox
// CA's certificate and a CA bundle), which podbot writes on the host, so
// a read-only root filesystem can have them and the sandbox cannot change
// them.
func WithTrustMount(hostDir, target string) Option {
	return func(p *Plan) error {
		if err := checkHostPath("secrets", hostDir); err != nil {
			return err
		}
		if err := checkContainerPath("secrets", target); err != nil {
			return err
		}
		return addMount(p, Mount{Source: hostDir, Target: target, ReadOnly: true, Origin: "secrets"})
	}
}

// WithGitHubScope labels a container with the repository (owner/name) its
// installation tokens are scoped to and the origin (scheme://host[:port]) git
// may send them to, so podbot token-daemon refreshes a token with the same
// scope and writes the same origin. The engine keeps labels out of the
// container's reach.
func WithGitHubScope(repo, origin string) Option {
	return func(p *Plan) error {
		for k, v := range map[string]string{LabelGitHubRepo: repo, LabelGitHubOrigin: origin} {
			if v == "" || len(v) > 512 || hasControl(v) || strings.ContainsAny(v, " \t") {
				return configError("github", errdefs.ErrInvalidValue, "label %s needs a value without spaces or control characters, got %q", k, v)
			}
		}
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[LabelGitHubRepo], p.Labels[LabelGitHubOrigin] = repo, origin
		return nil
	}
}

// WithGitAskpass makes path git's askpass program in the container
// (GIT_ASKPASS), replacing any GIT_ASKPASS the plan's environment already
// holds (from the agent's allowlist), so neither the image's helper nor the
// host's environment decides who gets the token.
func WithGitAskpass(path string) Option {
	return func(p *Plan) error {
		if err := checkContainerPath("git_askpass", path); err != nil {
			return err
		}
		p.Env = slices.DeleteFunc(p.Env, func(e string) bool { return strings.HasPrefix(e, "GIT_ASKPASS=") })
		p.Env = append(p.Env, "GIT_ASKPASS="+path)
		return nil
	}
}

// WithWorkspaceMount bind-mounts the canonical host directory source
// read-write at target and makes target the working directory.
func WithWorkspaceMount(source, target string) Option {
	return func(p *Plan) error {
		if err := checkHostPath("workspace.host_path", source); err != nil {
			return err
		}
		if err := checkContainerPath("workspace.container_path", target); err != nil {
			return err
		}
		if err := addMount(p, Mount{Source: source, Target: target, Origin: "workspace.host_path"}); err != nil {
			return err
		}
		p.WorkingDir = target
		return nil
	}
}

// addMount appends m unless another mount, tmpfs or the token directory
// already claims a target that overlaps it.
func addMount(p *Plan, m Mount) error {
	for _, o := range p.Mounts {
		if hostPathWithin(m.Target, o.Target) || hostPathWithin(o.Target, m.Target) {
			return configError(m.Origin, errdefs.ErrConflict,
				"mount target %s overlaps the mount at %s; choose another container path", m.Target, o.Target)
		}
	}
	for t := range p.Tmpfs {
		if hostPathWithin(m.Target, t) || hostPathWithin(t, m.Target) {
			return configError(m.Origin, errdefs.ErrConflict,
				"mount target %s overlaps the tmpfs at %s; choose another container path", m.Target, t)
		}
	}
	p.Mounts = append(p.Mounts, m)
	return guardMounts([]Mount{m}, p.EngineSocketPaths)
}

// WithUser sets the container user: a name or uid, optionally :group or :gid.
func WithUser(user string) Option {
	return func(p *Plan) error {
		if len(user) > 256 || strings.ContainsAny(user, " \t\r\n") || hasControl(user) ||
			strings.Count(user, ":") > 1 || strings.HasPrefix(user, ":") || strings.HasSuffix(user, ":") {
			return configError("sandbox.user", errdefs.ErrInvalidValue,
				"user %q must be a name or uid, optionally followed by :group or :gid", user)
		}
		p.User = user
		return nil
	}
}

// WithEnv adds environment entries (K=V) to the container's configuration,
// where the engine's inspect shows them: never pass a secret here (see
// WithAgentEnv). Keys that would point a process in the container at a
// container engine (DOCKER_HOST, CONTAINER_HOST, PODMAN_HOST) are refused.
func WithEnv(entries ...string) Option {
	return func(p *Plan) error {
		if err := checkEnv(entries); err != nil {
			return err
		}
		p.Env = append(p.Env, entries...)
		return nil
	}
}

// WithAgentEnv adds environment entries (K=V) that only the agent's exec
// gets (Plan.AgentEnv): Render never puts them in the container's
// configuration, so they stay out of the engine's inspect output and its
// on-disk container config. They follow WithEnv's rules.
func WithAgentEnv(entries ...string) Option {
	return func(p *Plan) error {
		if err := checkEnv(entries); err != nil {
			return err
		}
		p.AgentEnv = append(p.AgentEnv, entries...)
		return nil
	}
}

// checkEnv refuses malformed entries and engine connection variables. No
// value appears in its errors.
func checkEnv(entries []string) error {
	for _, e := range entries {
		k, _, ok := strings.Cut(e, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t") || hasControl(k) || strings.ContainsRune(e, 0) {
			return configError("agent.env_allowlist", errdefs.ErrInvalidValue,
				"environment entry for %q must be KEY=VALUE with a non-empty key and no NUL", k)
		}
		switch k {
		case "DOCKER_HOST", "CONTAINER_HOST", "PODMAN_HOST":
			return configError("agent.env_allowlist", errdefs.ErrRefused,
				"%s would point the sandbox at a host container engine; remove it from the allowlist", k)
		}
	}
	return nil
}

// hasControl reports whether s holds an ASCII control character.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}
