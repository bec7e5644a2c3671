package launchplan

// Mount is a bind mount from the host into the container.
type Mount struct {
	// Source is the canonical host path.
	Source string
	// Target is the absolute container path.
	Target string
	// ReadOnly mounts the source read-only.
	ReadOnly bool
	// Origin is the configuration key the mount comes from, named in errors.
	Origin string
}

// Device maps a host device node into the container.
type Device struct {
	// HostPath is the device node on the host.
	HostPath string
	// ContainerPath is where it appears in the container.
	ContainerPath string
	// Permissions are cgroup permissions: any of r, w, m.
	Permissions string
}

// Resources are the container's cgroup limits. Zero means no limit.
type Resources struct {
	// PidsLimit caps the number of processes.
	PidsLimit int64
	// MemoryBytes caps memory.
	MemoryBytes int64
	// NanoCPUs caps CPU in units of 1e-9 CPUs.
	NanoCPUs int64
	// CPUSet pins the container to these CPUs (a CPU list such as "0-1");
	// empty leaves it free to run on any (WithCPUSet).
	CPUSet string
}

// Security holds the container's privilege controls.
type Security struct {
	// Privileged runs the container privileged (privileged profile).
	Privileged bool
	// NoNewPrivileges sets no-new-privileges, so setuid binaries and file
	// capabilities cannot raise privileges.
	NoNewPrivileges bool
	// CapDropAll drops every capability before CapAdd is applied.
	CapDropAll bool
	// CapAdd are the capabilities kept (or added), without the CAP_ prefix.
	CapAdd []string
	// LabelDisable adds label=disable (SELinux).
	LabelDisable bool
	// ReadOnlyRootfs makes the root filesystem read-only.
	ReadOnlyRootfs bool
	// Devices are device nodes mapped into the container.
	Devices []Device
	// GPUs are CDI device names requested from the engine.
	GPUs []string
}

// StreamPolicy says how the agent's exec is attached.
type StreamPolicy struct {
	// TTY asks for a pseudo-terminal; the interactive flow still allocates one
	// only when both local stdin and stdout are terminals.
	TTY bool
	// Stdin attaches the caller's stdin.
	Stdin bool
	// ProtocolStdout means stdout carries protocol bytes only: no banner,
	// progress or diagnostics may be written to it.
	ProtocolStdout bool
}

// Plan is a fully resolved, validated launch. Build it with Normalize; adjust
// it only through Apply so the socket guard always runs.
type Plan struct {
	// Intent is the command family.
	Intent Intent
	// AgentKind and AgentMode are the resolved agent kind and mode.
	AgentKind AgentKind
	AgentMode AgentMode
	// Image is the image reference, trimmed.
	Image string
	// Name is the container name.
	Name string
	// User is the container user; empty means the image's user.
	User string
	// InitCommand is the container's main process.
	InitCommand []string
	// AgentCommand is the agent's argv, run as an exec; empty when there is
	// no agent.
	AgentCommand []string
	// Env are the container's environment entries (K=V). They are written
	// into the container's configuration, where the engine's inspect shows
	// them and they stay on disk while the container is kept, so they must
	// never hold a secret: those go in AgentEnv.
	Env []string
	// Home is the home directory the launch prepares, owned by User, before
	// credentials are copied in (WithAgentHome); empty uses the image's.
	Home string
	// AgentEnv are environment entries (K=V) given only to the agent's exec
	// (AgentExec), never to the container's configuration (Render): the
	// allowlisted host variables, such as API keys. The engine does not
	// persist an exec's environment in the container's configuration. It
	// is left out of JSON, and only its names may be shown (AgentEnvNames).
	AgentEnv []string `json:"-"`
	// WorkingDir is where the agent runs; empty means the image's default.
	WorkingDir string
	// Workspace is the workspace strategy the plan was built for.
	Workspace WorkspaceStrategy
	// Mounts are the bind mounts.
	Mounts []Mount
	// Tmpfs maps container paths to tmpfs mount options.
	Tmpfs map[string]string
	// Labels are the container labels.
	Labels map[string]string
	// Resources are the cgroup limits.
	Resources Resources
	// Security are the privilege controls.
	Security Security
	// Network is the network mode; empty means the engine's default.
	Network string
	// Egress is the egress mode and policy; the launch enforces an
	// allowlist with an internal network and podbot's egress proxy.
	Egress Egress
	// Stream is how the agent's exec is attached.
	Stream StreamPolicy
	// EngineSocketPaths are the host paths the socket guard protects.
	EngineSocketPaths []string
}

// Apply applies options in order, then re-runs the socket guard over the
// plan's mounts. It modifies the plan in place, and copies of a Plan share
// its slices and maps, so derive a new plan with Normalize rather than by
// copying. On error the plan may be partly modified and must not be used.
func (p *Plan) Apply(opts ...Option) error {
	for _, opt := range opts {
		if err := opt(p); err != nil {
			return err
		}
	}
	return guardMounts(p.Mounts, p.EngineSocketPaths)
}
