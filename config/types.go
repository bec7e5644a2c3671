package config

import "time"

// Config is podbot's resolved configuration. The zero value is not useful;
// start from Default or Load.
type Config struct {
	// EngineSocket is the container engine endpoint (engine_socket). Empty
	// means auto-detect (DOCKER_HOST, CONTAINER_HOST, PODMAN_HOST, then the
	// well-known sockets).
	EngineSocket string
	// Image is the sandbox image for agent containers (image).
	Image string

	GitHub    GitHub
	Workspace Workspace
	Creds     Creds
	Sandbox   Sandbox
	Network   Network
	Agent     Agent
	ACP       ACP
	Tools     Tools
	Pool      Pool
	// Kubernetes configures the Kubernetes backend ([kubernetes]), used
	// when Sandbox.Backend is BackendKubernetes.
	Kubernetes Kubernetes

	// Secrets are the credential vault's entries ([[secrets]] in the
	// config file only; no environment variable or flag sets them).
	Secrets []Secret
	// Pools are warm pools declared in the config file ([[pools]]); podbot
	// pool serve keeps them at size beside those podbot pool create made.
	Pools []PoolDecl
}

// GitHub configures the GitHub App that mints installation tokens.
type GitHub struct {
	// AppID is the GitHub App id (github.app_id); 0 means not configured.
	AppID int64
	// InstallationID is the App installation id (github.installation_id);
	// 0 means not configured.
	InstallationID int64
	// PrivateKeyPath is the host path of the App's PEM private key
	// (github.private_key_path).
	PrivateKeyPath string
	// APIURL is the GitHub REST API base URL (github.api_url).
	APIURL string
	// CloneBaseURL is the base URL repositories are cloned from
	// (github.clone_base_url).
	CloneBaseURL string
	// TokenRefreshBuffer is how long before expiry a token is refreshed
	// (github.token_refresh_buffer).
	TokenRefreshBuffer time.Duration
	// TokenPermissions are the permissions installation tokens are asked
	// for, by GitHub permission name ("contents", "pull_requests", ...) with
	// the level "read" or "write" (github.token_permissions).
	TokenPermissions map[string]string
}

// DefaultTokenPermissions returns the default of github.token_permissions:
// enough to clone, push a branch and open a pull request.
func DefaultTokenPermissions() map[string]string {
	return map[string]string{"contents": "write", "pull_requests": "write", "metadata": "read"}
}

// Configured reports whether any GitHub App setting is present.
func (g GitHub) Configured() bool {
	return g.AppID != 0 || g.InstallationID != 0 || g.PrivateKeyPath != ""
}

// Workspace source values.
const (
	// SourceGitHubClone clones a repository inside the container.
	SourceGitHubClone = "github_clone"
	// SourceHostMount bind-mounts a host directory into the container.
	SourceHostMount = "host_mount"
	// SourceLocalClone copies a local repository into the container.
	SourceLocalClone = "local_clone"
)

// Workspace says where the agent finds its source code.
type Workspace struct {
	// Source is SourceGitHubClone or SourceHostMount (workspace.source).
	Source string
	// BaseDir is the in-container directory clones go into (workspace.base_dir).
	BaseDir string
	// HostPath is the host directory mounted in host_mount mode
	// (workspace.host_path).
	HostPath string
	// RepoPath is the host repository local_clone copies into the
	// container (workspace.repo_path); --repo PATH overrides it.
	RepoPath string
	// ContainerPath is where the host directory appears in the container
	// (workspace.container_path).
	ContainerPath string
	// AllowedRoots are the host directories a host_mount path must resolve
	// inside (workspace.allowed_roots).
	AllowedRoots []string
	// MaxScanEntries bounds the walk that checks a host_mount tree for unix
	// sockets (workspace.max_scan_entries).
	MaxScanEntries int64
}

// Creds selects the agent credentials copied into the container.
type Creds struct {
	// CopyClaude copies ~/.claude (creds.copy_claude).
	CopyClaude bool
	// CopyCodex copies ~/.codex (creds.copy_codex).
	CopyCodex bool
	// VaultCodexKey moves the API key of the copied ~/.codex/auth.json
	// into the credential vault in allowlist mode (creds.vault_codex_key).
	VaultCodexKey bool
	// Exclude lists glob patterns, relative to the home directory, of paths
	// left out of the copy (creds.exclude).
	Exclude []string
}

// SELinux label modes.
const (
	// SELinuxDisableForContainer adds label=disable to the container.
	SELinuxDisableForContainer = "disable_for_container"
	// SELinuxKeepDefault leaves the engine's SELinux labelling alone.
	SELinuxKeepDefault = "keep_default"
)

// Sandbox holds the hardening settings of agent containers.
type Sandbox struct {
	// Privileged selects the privileged profile (sandbox.privileged).
	Privileged bool
	// MountDevFuse mounts /dev/fuse and adds SYS_ADMIN in the minimal
	// profile (sandbox.mount_dev_fuse).
	MountDevFuse bool
	// SELinuxLabelMode is SELinuxDisableForContainer or SELinuxKeepDefault
	// (sandbox.selinux_label_mode).
	SELinuxLabelMode string
	// PidsLimit caps the number of processes; 0 means no limit
	// (sandbox.pids_limit).
	PidsLimit int64
	// Memory caps memory; 0 means no limit (sandbox.memory).
	Memory ByteSize
	// CPUs caps CPU time in CPUs; 0 means no limit (sandbox.cpus).
	CPUs float64
	// Network is the container network of agent sandboxes
	// (sandbox.network); empty leaves it to network.mode. "none" takes the
	// network away in every mode; bridge or a named network needs
	// network.mode = "open".
	Network string
	// ReadOnlyRootfs makes the root filesystem read-only with a tmpfs /tmp
	// (sandbox.read_only_rootfs).
	ReadOnlyRootfs bool
	// GPUs lists CDI device names to pass through (sandbox.gpus).
	GPUs []string
	// User is the user the agent runs as; empty means the image's default
	// (sandbox.user).
	User string
	// Backend is where sandboxes run: BackendEngine (the container engine)
	// or BackendKubernetes (a cluster's API server) (sandbox.backend).
	Backend string
}

// Sandbox backends (sandbox.backend).
const (
	// BackendEngine runs sandboxes as containers on the Podman or Docker engine.
	BackendEngine = "engine"
	// BackendKubernetes runs sandboxes as Pods through a Kubernetes API server.
	BackendKubernetes = "kubernetes"
)

// Kubernetes configures the Kubernetes backend ([kubernetes]).
type Kubernetes struct {
	// Kubeconfig is the kubeconfig file (kubernetes.kubeconfig); empty
	// follows client-go's loading rules: $KUBECONFIG, ~/.kube/config, then
	// the in-cluster service account.
	Kubeconfig string
	// Context is the kubeconfig context; empty is its current context
	// (kubernetes.context).
	Context string
	// Namespace is where sandbox Pods go; empty is the context's namespace,
	// else "default" (kubernetes.namespace).
	Namespace string
	// RuntimeClass is the Pods' RuntimeClass, e.g. gvisor or kata; empty
	// is the cluster's default runtime (kubernetes.runtime_class).
	RuntimeClass string
	// NodeSelector are node labels a sandbox Pod must be scheduled on
	// (kubernetes.node_selector).
	NodeSelector map[string]string
	// ImagePullPolicy is Always, IfNotPresent or Never; empty leaves the
	// cluster's default (kubernetes.image_pull_policy).
	ImagePullPolicy string
	// ServiceAccount is the Pods' service account; its token is never
	// mounted (kubernetes.service_account).
	ServiceAccount string
	// Tolerations let sandbox Pods onto tainted nodes, each written as
	// kubectl taint writes a taint: key[=value]:Effect (see
	// ParseToleration) (kubernetes.tolerations).
	Tolerations []string
}

// Network modes (network.mode), as package egress names them.
const (
	// NetworkAllowlist lets agent sandboxes reach only the hosts the egress
	// rules allow, through podbot's egress proxy.
	NetworkAllowlist = "allowlist"
	// NetworkNone gives agent sandboxes no network.
	NetworkNone = "none"
	// NetworkOpen leaves agent sandboxes on the engine's default network
	// with no egress control.
	NetworkOpen = "open"
)

// Network is the egress policy of agent sandboxes (podbot run, host and
// create). Tool sessions have their own network (tools.network).
type Network struct {
	// Mode is NetworkAllowlist, NetworkNone or NetworkOpen (network.mode).
	Mode string
	// Allow lists egress rules: host, host:port, *.domain, *.domain:port or
	// an IP address (network.allow).
	Allow []string
	// Presets names the rule sets added to Allow: agent, github, packages
	// (network.presets).
	Presets []string
	// Resolve pins names to addresses, host=address or host=address:port
	// (network.resolve).
	Resolve []string
	// UpstreamCA is the absolute host path of a PEM bundle the egress proxy
	// trusts upstream besides the system roots (network.upstream_ca).
	UpstreamCA string
}

// DefaultNetworkPresets returns the default of network.presets.
func DefaultNetworkPresets() []string { return []string{"agent", "github", "packages"} }

// Agent kinds.
const (
	// KindClaude is Claude Code.
	KindClaude = "claude"
	// KindCodex is the Codex CLI.
	KindCodex = "codex"
	// KindCustom is any agent started with agent.command and agent.args.
	KindCustom = "custom"
)

// Agent modes.
const (
	// ModePodbot runs the agent interactively on a terminal (podbot run).
	ModePodbot = "podbot"
	// ModeACP hosts an Agent Client Protocol server on stdio (podbot host).
	ModeACP = "acp"
	// ModeCodexAppServer hosts the Codex app-server protocol on stdio
	// (podbot host).
	ModeCodexAppServer = "codex_app_server"
)

// Agent selects the agent and how it is driven.
type Agent struct {
	// Kind is KindClaude, KindCodex, KindCustom or a built-in ACP kind of
	// package agentkind (agent.kind).
	Kind string
	// Mode is ModePodbot, ModeACP or ModeCodexAppServer (agent.mode).
	Mode string
	// Command is the executable of a custom agent (agent.command).
	Command string
	// Args are the arguments of a custom agent (agent.args).
	Args []string
	// EnvAllowlist names host environment variables passed to the agent
	// (agent.env_allowlist).
	EnvAllowlist []string
	// EnvRequired names allowlisted variables that must be set on the host
	// (agent.env_required).
	EnvRequired []string
	// AllowHostDelegation forwards ACP fs/terminal capabilities and methods
	// to the client unmodified (agent.allow_host_delegation).
	AllowHostDelegation bool
	// AllowTerminalAuth lets ACP terminal authentication through in both
	// directions (agent.allow_terminal_auth): the IDE may then relaunch
	// podbot with arguments and environment the agent chose.
	AllowTerminalAuth bool
	// ModelEndpoint points a built-in ACP kind at a model API base URL
	// (agent.model_endpoint), for a self-hosted or mock provider.
	ModelEndpoint string
	// Model names the model to ask the endpoint for (agent.model).
	Model string
	// CodexBlockDynamicTools refuses Codex app-server item/tool/call
	// requests (agent.codex_block_dynamic_tools).
	CodexBlockDynamicTools bool
}

// Hosted reports whether the mode is a protocol-hosting mode, served by
// podbot host rather than podbot run.
func (a Agent) Hosted() bool { return a.Mode == ModeACP || a.Mode == ModeCodexAppServer }

// ACP configures the Agent Client Protocol bridge.
type ACP struct {
	// MaxFrameBytes bounds one NDJSON frame (acp.max_frame_bytes).
	MaxFrameBytes ByteSize
}

// Tools configures tool sessions (the sandboxed shell, files and Python).
type Tools struct {
	// Image is the tool-session image (tools.image).
	Image string
	// WorkspaceRoot is the host directory holding session workspaces; empty
	// means podbot's cache directory (tools.workspace_root).
	WorkspaceRoot string
	// ShellTimeout is the default shell_execute timeout (tools.shell_timeout).
	ShellTimeout time.Duration
	// Memory caps a session container's memory (tools.memory).
	Memory ByteSize
	// CPUs caps a session container's CPU time (tools.cpus).
	CPUs float64
	// CPUSet places a session container on CPUs: auto, none or a CPU list
	// (tools.cpuset).
	CPUSet string
	// BatchScheduling runs the session's sidecar, and the commands it
	// starts, under SCHED_BATCH (tools.batch_scheduling).
	BatchScheduling bool
	// PidsLimit caps a session container's processes (tools.pids_limit).
	PidsLimit int64
	// Network is the session container's network (tools.network):
	// none, bridge, a named network, or NetworkAllowlist (an egress
	// proxy; not for warm pools).
	Network string
	// User is the user tools run as (tools.user).
	User string
	// ReadOnlyRootfs makes the session's root filesystem read-only
	// (tools.read_only_rootfs).
	ReadOnlyRootfs bool
	// IdleTimeout removes a session container unused this long; 0 disables
	// (tools.idle_timeout).
	IdleTimeout time.Duration
	// MaxUptime removes a session container this long after it started;
	// 0 means no limit (tools.max_uptime).
	MaxUptime time.Duration
	// AllowedHostRoots are the host directories that may hydrate a session
	// workspace (tools.allowed_host_roots).
	AllowedHostRoots []string
}

// Pool configures warm pools (podbot pool).
type Pool struct {
	// StateDir holds pool definitions and statuses (pool.state_dir); empty
	// means $XDG_STATE_HOME/podbot/pools, else ~/.local/state/podbot/pools.
	StateDir string
	// MaxAge replaces ready members older than this; 0 keeps them
	// (pool.max_age).
	MaxAge time.Duration
	// RefillInterval is how often podbot pool serve checks every pool
	// (pool.refill_interval).
	RefillInterval time.Duration
}
