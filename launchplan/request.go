package launchplan

// Intent is the command family a container is launched for. It decides the
// stream policy, the default resources and which agent modes are legal.
type Intent string

const (
	// IntentInteractive is podbot run (and podbot create): an agent attached
	// to the operator's terminal.
	IntentInteractive Intent = "interactive"
	// IntentHosting is podbot host: a protocol server without a TTY whose
	// stdout carries protocol bytes only.
	IntentHosting Intent = "hosting"
	// IntentTools is a tool session: the sidecar serves tools over MCP.
	IntentTools Intent = "tools"
)

// AgentKind names the agent that runs in the container.
type AgentKind string

const (
	// KindNone means no agent: podbot create and tool sessions.
	KindNone AgentKind = ""
	// KindClaude is Claude Code.
	KindClaude AgentKind = "claude"
	// KindCodex is the Codex CLI.
	KindCodex AgentKind = "codex"
	// KindCustom runs Agent.Command with Agent.Args.
	KindCustom AgentKind = "custom"
)

// AgentMode is how the agent is driven (config agent.mode).
type AgentMode string

const (
	// ModeDefault lets the intent choose: podbot for interactive launches.
	ModeDefault AgentMode = ""
	// ModePodbot is interactive, terminal-attached execution.
	ModePodbot AgentMode = "podbot"
	// ModeCodexAppServer hosts the Codex App Server protocol on stdio.
	ModeCodexAppServer AgentMode = "codex_app_server"
	// ModeACP hosts newline-delimited ACP JSON-RPC on stdio.
	ModeACP AgentMode = "acp"
)

// Agent describes the agent to launch.
type Agent struct {
	// Kind is the agent kind (config agent.kind).
	Kind AgentKind
	// Mode is the agent mode (config agent.mode).
	Mode AgentMode
	// Command is the executable for KindCustom (config agent.command). It
	// must be empty for built-in kinds.
	Command string
	// Args are the arguments for KindCustom (config agent.args). They must be
	// empty for built-in kinds.
	Args []string
	// ExtraArgs are appended after the resolved command for every kind (the
	// arguments after -- on the command line).
	ExtraArgs []string
}

// WorkspaceStrategy is where the agent sees source code (config workspace.source).
type WorkspaceStrategy string

const (
	// WorkspaceNone gives the container no workspace.
	WorkspaceNone WorkspaceStrategy = "none"
	// WorkspaceGitHubClone clones a repository inside the container.
	WorkspaceGitHubClone WorkspaceStrategy = "github_clone"
	// WorkspaceHostMount bind-mounts a host directory.
	WorkspaceHostMount WorkspaceStrategy = "host_mount"
	// WorkspaceLocalClone copies a host repository into the container
	// (no mount): ContainerPath is the copy's directory.
	WorkspaceLocalClone WorkspaceStrategy = "local_clone"
)

// Workspace is the resolved workspace of a request.
type Workspace struct {
	// Strategy selects clone, host mount or none; empty means none.
	Strategy WorkspaceStrategy
	// HostPath is the host directory to bind-mount (host_mount only). It must
	// already be canonical: resolved by workspace.ResolveHostMount.
	HostPath string
	// ContainerPath is the mount target for host_mount (default /workspace)
	// or the clone directory for github_clone (default BaseDir). It becomes
	// the agent's working directory.
	ContainerPath string
	// BaseDir is the directory clones go under (github_clone only).
	BaseDir string
	// Owner is the host user that owns HostPath (host_mount only). The agent
	// runs as this user unless Sandbox.User names another unprivileged one,
	// so nothing it writes to the host belongs to root.
	Owner *HostOwner
	// GitDir is HostPath's .git directory, when it has one: its config and
	// hooks are mounted read-only so the agent cannot plant code that git
	// would run on the host.
	GitDir string
}

// HostOwner is a numeric host user and group.
type HostOwner struct {
	UID, GID int
}

// SELinuxLabelMode is config sandbox.selinux_label_mode.
type SELinuxLabelMode string

const (
	// SELinuxDisableForContainer adds label=disable (the default).
	SELinuxDisableForContainer SELinuxLabelMode = "disable_for_container"
	// SELinuxKeepDefault leaves the engine's SELinux labelling alone.
	SELinuxKeepDefault SELinuxLabelMode = "keep_default"
)

// Sandbox holds the operator's overrides (config [sandbox]). Zero values
// select the intent's defaults; a negative limit removes that limit.
type Sandbox struct {
	// Privileged selects the privileged profile: the container runs
	// privileged, and MountDevFuse, SELinuxLabelMode and CapAdd are ignored.
	Privileged bool
	// MountDevFuse maps /dev/fuse (rwm) and adds SYS_ADMIN (minimal profile).
	MountDevFuse bool
	// SELinuxLabelMode is disable_for_container (default) or keep_default.
	SELinuxLabelMode SELinuxLabelMode
	// PidsLimit caps the number of processes; 0 default, negative unlimited.
	PidsLimit int64
	// MemoryBytes caps memory; 0 default, negative unlimited.
	MemoryBytes int64
	// NanoCPUs caps CPU in units of 1e-9 CPUs; 0 default, negative unlimited.
	NanoCPUs int64
	// Network is none, bridge, default or a user-defined network name; empty
	// selects none for tool sessions and the engine's default for agents.
	// host and container:<id> are refused.
	Network string
	// ReadOnlyRootfs makes the root filesystem read-only with a tmpfs /tmp;
	// nil selects the intent's default (true for tool sessions).
	ReadOnlyRootfs *bool
	// GPUs are CDI device names, for example nvidia.com/gpu=all.
	GPUs []string
	// User is the container user (name, uid or uid:gid); empty selects the
	// intent's default (the image's user for agents, 65534:65534 for tools).
	User string
	// CapAdd are extra capabilities to keep, with or without the CAP_ prefix.
	CapAdd []string
}

// Request is everything Normalize needs. The caller resolves configuration,
// host paths and socket paths before building it.
type Request struct {
	// Intent is interactive, hosting or tools.
	Intent Intent
	// Agent is the agent to run (KindNone for tool sessions and podbot create).
	Agent Agent
	// Image is the image reference; empty or whitespace is refused.
	Image string
	// Name is an optional container name; empty selects podbot-<kind>-<short id>.
	Name string
	// SessionID identifies this launch; it names and labels the container.
	SessionID string
	// InitCommand is the container's main process, which must keep it alive
	// and reap zombies (for example podbot-sidecar init); empty selects
	// DefaultInitCommand. The agent itself runs as an exec.
	InitCommand []string
	// Workspace is the resolved workspace.
	Workspace Workspace
	// Env are environment entries (K=V) for the container's configuration,
	// which the engine shows in inspect and keeps on disk: never secrets.
	Env []string
	// AgentEnv are the environment entries (K=V) already filtered by the
	// allowlist (agent.env_allowlist, agent.env_required). They may hold
	// secrets, so the plan passes them only to the agent's exec.
	AgentEnv []string
	// TokenFile is the host path of the GitHub token file, optional. Its
	// directory is mounted read-only at /run/secrets so refreshes made by
	// atomic rename are seen inside the container; the file must be named
	// ghapp_token.
	TokenFile string
	// EngineSocketPaths are host paths that must never enter the container:
	// the engine socket and what it resolves to (its directory is derived). A
	// directory listed here is guarded with everything below it. The caller
	// resolves symlinks; launchplan does no I/O.
	EngineSocketPaths []string
	// Sandbox holds the operator's overrides.
	Sandbox Sandbox
	// Labels are extra labels; keys under podbot. are reserved.
	Labels map[string]string
	// Version is podbot's version, recorded in the podbot.version label.
	Version string
	// Egress is the network egress setting, copied to the plan.
	Egress Egress
}
