package config

import (
	"strings"
	"time"
)

// Type names the kind of value a key holds, as shown in KeyInfo.Type.
type Type string

// Value types.
const (
	TypeString   Type = "string"
	TypeBool     Type = "bool"
	TypeID       Type = "id"       // non-negative integer id (0 = unset)
	TypeInt      Type = "int"      // non-negative integer
	TypeFloat    Type = "float"    // non-negative number
	TypeSize     Type = "size"     // bytes, or a string like "512m"
	TypeDuration Type = "duration" // Go duration string like "15m"
	TypeList     Type = "list"     // array of strings; comma-separated in env
	TypeMap      Type = "map"      // table of string values; NAME=VALUE,... in env
)

// KeyInfo describes one configuration key.
type KeyInfo struct {
	// Key is the dotted key, e.g. "sandbox.privileged".
	Key string
	// Env is the environment variable that sets it, e.g. "PODBOT_SANDBOX_PRIVILEGED".
	Env string
	// Default is the default value as text.
	Default string
	// Type is the value type.
	Type Type
	// Secret marks values that are redacted wherever they are shown.
	Secret bool
	// Description says what the key does.
	Description string
}

// keyDef is a KeyInfo plus typed default and a field accessor.
type keyDef struct {
	key    string
	typ    Type
	secret bool
	def    any
	desc   string
	// field returns a pointer to the key's field in c: *string, *bool,
	// *int64, *float64, *ByteSize, *time.Duration, *[]string or
	// *map[string]string.
	field func(c *Config) any
}

// envPrefix starts every podbot environment variable.
const envPrefix = "PODBOT_"

// envConfigPath names the config file when --config is not given.
const envConfigPath = "PODBOT_CONFIG_PATH"

// envName returns the environment variable for a dotted key.
func envName(key string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// keyTable returns every key, in documentation order. It builds a fresh
// table each call so no package state is shared or mutable.
func keyTable() []keyDef {
	return []keyDef{
		{"engine_socket", TypeString, false, "", "Container engine endpoint (unix://, npipe://, tcp://, http(s)://, ssh:// or a socket path). Empty: auto-detect.", func(c *Config) any { return &c.EngineSocket }},
		{"image", TypeString, false, "localhost/podbot-sandbox:latest", "Sandbox image for agent containers.", func(c *Config) any { return &c.Image }},

		{"github.app_id", TypeID, false, int64(0), "GitHub App id. 0: no GitHub App.", func(c *Config) any { return &c.GitHub.AppID }},
		{"github.installation_id", TypeID, false, int64(0), "GitHub App installation id.", func(c *Config) any { return &c.GitHub.InstallationID }},
		{"github.private_key_path", TypeString, false, "", "Host path of the GitHub App private key (PEM, RSA).", func(c *Config) any { return &c.GitHub.PrivateKeyPath }},
		{"github.api_url", TypeString, false, "https://api.github.com", "GitHub REST API base URL (set for GitHub Enterprise Server).", func(c *Config) any { return &c.GitHub.APIURL }},
		{"github.clone_base_url", TypeString, false, "https://github.com/", "Base URL repositories are cloned from.", func(c *Config) any { return &c.GitHub.CloneBaseURL }},
		{"github.token_permissions", TypeMap, false, DefaultTokenPermissions(), "Permissions of the installation tokens (name = \"read\" or \"write\"); tokens are also limited to the one repository being worked on.", func(c *Config) any { return &c.GitHub.TokenPermissions }},
		{"github.token_refresh_buffer", TypeDuration, false, 5 * time.Minute, "Refresh an installation token this long before it expires.", func(c *Config) any { return &c.GitHub.TokenRefreshBuffer }},

		{"workspace.source", TypeString, false, SourceGitHubClone, "Where the code comes from: github_clone, local_clone or host_mount.", func(c *Config) any { return &c.Workspace.Source }},
		{"workspace.base_dir", TypeString, false, "/work", "In-container directory repositories are cloned into (github_clone).", func(c *Config) any { return &c.Workspace.BaseDir }},
		{"workspace.host_path", TypeString, false, "", "Absolute host directory to mount (host_mount only).", func(c *Config) any { return &c.Workspace.HostPath }},
		{"workspace.repo_path", TypeString, false, "", "Absolute path of the host git repository local_clone copies into the sandbox (--repo PATH overrides it).", func(c *Config) any { return &c.Workspace.RepoPath }},
		{"workspace.container_path", TypeString, false, "/workspace", "Where the host directory appears in the container (host_mount).", func(c *Config) any { return &c.Workspace.ContainerPath }},
		{"workspace.allowed_roots", TypeList, false, []string{}, "Host directories a host_mount path must resolve inside. Required for host_mount.", func(c *Config) any { return &c.Workspace.AllowedRoots }},
		{"workspace.max_scan_entries", TypeInt, false, int64(200000), "Entries podbot checks for unix sockets in a host_mount tree before refusing it as too large to vouch for.", func(c *Config) any { return &c.Workspace.MaxScanEntries }},

		{"creds.copy_claude", TypeBool, false, true, "Copy ~/.claude into the container.", func(c *Config) any { return &c.Creds.CopyClaude }},
		{"creds.copy_codex", TypeBool, false, true, "Copy ~/.codex into the container.", func(c *Config) any { return &c.Creds.CopyCodex }},
		{"creds.vault_codex_key", TypeBool, false, true, "In network.mode = allowlist, move the OPENAI_API_KEY of the copied ~/.codex/auth.json into the credential vault: the sandbox's copy holds a placeholder the egress proxy swaps for the key on api.openai.com (and Codex's openai_base_url host).", func(c *Config) any { return &c.Creds.VaultCodexKey }},
		{"creds.exclude", TypeList, false, defaultCredsExclude(), "Glob patterns (relative to the home directory) left out of the credential copy.", func(c *Config) any { return &c.Creds.Exclude }},

		{"sandbox.privileged", TypeBool, false, false, "Privileged profile (nested containers work everywhere; much weaker isolation).", func(c *Config) any { return &c.Sandbox.Privileged }},
		{"sandbox.mount_dev_fuse", TypeBool, false, false, "Minimal profile: mount /dev/fuse and add SYS_ADMIN for fuse-overlayfs.", func(c *Config) any { return &c.Sandbox.MountDevFuse }},
		{"sandbox.selinux_label_mode", TypeString, false, SELinuxDisableForContainer, "disable_for_container (label=disable) or keep_default. Ignored when privileged.", func(c *Config) any { return &c.Sandbox.SELinuxLabelMode }},
		{"sandbox.pids_limit", TypeInt, false, int64(4096), "Maximum processes in the container. 0: no limit.", func(c *Config) any { return &c.Sandbox.PidsLimit }},
		{"sandbox.memory", TypeSize, false, 4 * GiB, "Memory limit (e.g. 512m, 4g). 0: no limit.", func(c *Config) any { return &c.Sandbox.Memory }},
		{"sandbox.cpus", TypeFloat, false, 2.0, "CPU limit in CPUs (e.g. 1.5). 0: no limit.", func(c *Config) any { return &c.Sandbox.CPUs }},
		{"sandbox.network", TypeString, false, "", "Container network of agent sandboxes: none, bridge or a named network. Empty: as network.mode decides (today the engine's bridge unless network.mode = none). bridge or a named network needs network.mode = open; host is refused.", func(c *Config) any { return &c.Sandbox.Network }},
		{"sandbox.read_only_rootfs", TypeBool, false, false, "Read-only root filesystem with a tmpfs /tmp.", func(c *Config) any { return &c.Sandbox.ReadOnlyRootfs }},
		{"sandbox.gpus", TypeList, false, []string{}, "CDI device names to pass through (e.g. nvidia.com/gpu=all).", func(c *Config) any { return &c.Sandbox.GPUs }},
		{"sandbox.user", TypeString, false, "", "User[:group] the agent runs as (name or id). Empty: the image's default.", func(c *Config) any { return &c.Sandbox.User }},

		{"sandbox.backend", TypeString, false, BackendEngine, "Where sandboxes run: engine (Podman or Docker) or kubernetes (Pods through the API server of [kubernetes]; see \"Kubernetes backend\"). --backend overrides it.", func(c *Config) any { return &c.Sandbox.Backend }},

		{"network.mode", TypeString, false, NetworkAllowlist, "Egress of agent sandboxes (run, host, create): allowlist (only the hosts of network.allow and network.presets, through podbot's egress proxy), none (no network) or open (the engine's default network, no egress control; podbot warns). Tool sessions use tools.network.", func(c *Config) any { return &c.Network.Mode }},
		{"network.allow", TypeList, false, []string{}, "Egress rules: host, host:port, *.domain, *.domain:port or an IP address ([v6]:port); no port means 443 and 80. --allow-host adds one for a single launch.", func(c *Config) any { return &c.Network.Allow }},
		{"network.presets", TypeList, false, DefaultNetworkPresets(), "Rule sets added to network.allow: agent (the agent's API and sign-in hosts), github (the hosts of github.api_url and github.clone_base_url), packages (npm, PyPI, the Go module proxy, crates.io). Empty list: none.", func(c *Config) any { return &c.Network.Presets }},
		{"network.resolve", TypeList, false, []string{}, "Pinned names, host=address or host=address:port (like curl --resolve): the egress proxy connects there without asking DNS.", func(c *Config) any { return &c.Network.Resolve }},
		{"network.upstream_ca", TypeString, false, "", "Absolute host path of a PEM bundle the egress proxy trusts upstream besides the system roots; checked (readable, holds a certificate) when a sandbox is launched.", func(c *Config) any { return &c.Network.UpstreamCA }},

		{"agent.kind", TypeString, false, KindClaude, "Agent: claude, codex, custom, or an ACP agent: opencode, droid, goose, claude-acp, codex-acp, gemini (agent.mode = \"acp\").", func(c *Config) any { return &c.Agent.Kind }},
		{"agent.mode", TypeString, false, ModePodbot, "podbot (interactive, podbot run), acp or codex_app_server (protocol hosting, podbot host).", func(c *Config) any { return &c.Agent.Mode }},
		{"agent.command", TypeString, false, "", "Executable of a custom agent (required for kind = custom; not allowed otherwise).", func(c *Config) any { return &c.Agent.Command }},
		{"agent.args", TypeList, false, []string{}, "Arguments of a custom agent.", func(c *Config) any { return &c.Agent.Args }},
		{"agent.env_allowlist", TypeList, false, []string{}, "Host environment variables passed to the agent (names only).", func(c *Config) any { return &c.Agent.EnvAllowlist }},
		{"agent.env_required", TypeList, false, []string{}, "Allowlisted variables that must be set on the host.", func(c *Config) any { return &c.Agent.EnvRequired }},
		{"agent.allow_host_delegation", TypeBool, false, false, "ACP: forward fs/terminal capabilities and requests to the client's host (crosses the trust boundary).", func(c *Config) any { return &c.Agent.AllowHostDelegation }},
		{"agent.allow_terminal_auth", TypeBool, false, false, "ACP: let terminal authentication through (the client's auth.terminal capability, the agent's terminal auth methods); the IDE then relaunches podbot with arguments and environment the agent chose (crosses the trust boundary).", func(c *Config) any { return &c.Agent.AllowTerminalAuth }},
		{"agent.model_endpoint", TypeString, false, "", "ACP kinds: base URL of the model API the agent uses instead of its vendor's (see the agents table in README); its host:port joins the egress allowlist.", func(c *Config) any { return &c.Agent.ModelEndpoint }},
		{"agent.model", TypeString, false, "", "ACP kinds: the model to ask agent.model_endpoint for.", func(c *Config) any { return &c.Agent.Model }},
		{"agent.codex_block_dynamic_tools", TypeBool, false, false, "Codex app-server: refuse item/tool/call requests that run tools on the client's host.", func(c *Config) any { return &c.Agent.CodexBlockDynamicTools }},

		{"acp.max_frame_bytes", TypeSize, false, 32 * MiB, "Largest ACP frame (one JSON-RPC line) accepted.", func(c *Config) any { return &c.ACP.MaxFrameBytes }},

		{"tools.image", TypeString, false, "python:3.12-bookworm", "Image for tool sessions.", func(c *Config) any { return &c.Tools.Image }},
		{"tools.workspace_root", TypeString, false, "", "Absolute host directory for tool-session workspaces. Empty: podbot's cache directory.", func(c *Config) any { return &c.Tools.WorkspaceRoot }},
		{"tools.shell_timeout", TypeDuration, false, 30 * time.Second, "Default shell_execute timeout (1s to 120s).", func(c *Config) any { return &c.Tools.ShellTimeout }},
		{"tools.memory", TypeSize, false, 1 * GiB, "Memory limit of a tool-session container. 0: no limit.", func(c *Config) any { return &c.Tools.Memory }},
		{"tools.cpus", TypeFloat, false, 1.0, "CPU limit of a tool-session container. 0: no limit.", func(c *Config) any { return &c.Tools.CPUs }},
		{"tools.cpuset", TypeString, false, "auto", "CPUs of a tool-session container: auto (pin to as many CPUs as tools.cpus rounds up to, where the fewest podbot sessions are pinned), none, or a CPU list such as 0-1.", func(c *Config) any { return &c.Tools.CPUSet }},
		{"tools.batch_scheduling", TypeBool, false, true, "Run the tool sidecar, and the commands it starts, under SCHED_BATCH (Linux): its wake-ups wait for a running command instead of preempting it. false: the default policy.", func(c *Config) any { return &c.Tools.BatchScheduling }},
		{"tools.pids_limit", TypeInt, false, int64(512), "Maximum processes in a tool-session container. 0: no limit.", func(c *Config) any { return &c.Tools.PidsLimit }},
		{"tools.network", TypeString, false, "none", "Network of a tool-session sandbox: none, bridge or a named network; allowlist sends its traffic through an egress proxy (a container on the engine, a Pod on kubernetes) that allows the hosts of network.allow and network.presets (not with warm pools).", func(c *Config) any { return &c.Tools.Network }},
		{"tools.user", TypeString, false, "65534:65534", "User[:group] tools run as.", func(c *Config) any { return &c.Tools.User }},
		{"tools.read_only_rootfs", TypeBool, false, true, "Read-only root filesystem for tool sessions (/workspace stays writable).", func(c *Config) any { return &c.Tools.ReadOnlyRootfs }},
		{"tools.idle_timeout", TypeDuration, false, 15 * time.Minute, "Remove a tool-session container idle this long. 0: never.", func(c *Config) any { return &c.Tools.IdleTimeout }},
		{"tools.max_uptime", TypeDuration, false, time.Duration(0), "Remove a tool-session container this long after it started. 0: no limit.", func(c *Config) any { return &c.Tools.MaxUptime }},
		{"pool.state_dir", TypeString, false, "", "Absolute host directory of warm-pool definitions and statuses. Empty: $XDG_STATE_HOME/podbot/pools, else ~/.local/state/podbot/pools.", func(c *Config) any { return &c.Pool.StateDir }},
		{"pool.max_age", TypeDuration, false, time.Hour, "Replace a ready pool member older than this (podbot pool serve). 0: never.", func(c *Config) any { return &c.Pool.MaxAge }},
		{"pool.refill_interval", TypeDuration, false, time.Second, "How often podbot pool serve checks every pool (ready count, stopped and over-age members).", func(c *Config) any { return &c.Pool.RefillInterval }},
		{"tools.allowed_host_roots", TypeList, false, []string{}, "Host directories that may be copied into a tool-session workspace.", func(c *Config) any { return &c.Tools.AllowedHostRoots }},

		{"kubernetes.kubeconfig", TypeString, false, "", "Kubeconfig file of the kubernetes backend. Empty: client-go's loading rules ($KUBECONFIG, ~/.kube/config, then the in-cluster service account).", func(c *Config) any { return &c.Kubernetes.Kubeconfig }},
		{"kubernetes.context", TypeString, false, "", "Kubeconfig context. Empty: the current context.", func(c *Config) any { return &c.Kubernetes.Context }},
		{"kubernetes.namespace", TypeString, false, "", "Namespace of sandbox Pods. Empty: the context's namespace, else default.", func(c *Config) any { return &c.Kubernetes.Namespace }},
		{"kubernetes.runtime_class", TypeString, false, "", "RuntimeClass of sandbox Pods (e.g. gvisor, kata). Empty: the cluster's default runtime.", func(c *Config) any { return &c.Kubernetes.RuntimeClass }},
		{"kubernetes.node_selector", TypeMap, false, map[string]string{}, "Node labels sandbox Pods must be scheduled on (label = \"value\").", func(c *Config) any { return &c.Kubernetes.NodeSelector }},
		{"kubernetes.image_pull_policy", TypeString, false, "", "Always, IfNotPresent or Never. Empty: the cluster's default.", func(c *Config) any { return &c.Kubernetes.ImagePullPolicy }},
		{"kubernetes.service_account", TypeString, false, "", "Service account of sandbox Pods (its token is never mounted). Empty: the namespace's default.", func(c *Config) any { return &c.Kubernetes.ServiceAccount }},
		{"kubernetes.tolerations", TypeList, false, []string{}, "Taints sandbox Pods tolerate, written as kubectl taint writes them: key=value:Effect (matches that value) or key:Effect (any value); Effect is NoSchedule, PreferNoSchedule or NoExecute. With kubernetes.node_selector it sends sandboxes to dedicated nodes.", func(c *Config) any { return &c.Kubernetes.Tolerations }},
	}
}

// defaultCredsExclude leaves out caches, logs and session history, which can
// be gigabytes and are not needed to log in.
func defaultCredsExclude() []string {
	return []string{
		".claude/cache", ".claude/logs", ".claude/projects", ".claude/shell-snapshots",
		".claude/statsig", ".claude/todos",
		".codex/cache", ".codex/log", ".codex/sessions",
	}
}

// Keys describes every configuration key, in documentation order.
func Keys() []KeyInfo {
	defs := keyTable()
	out := make([]KeyInfo, 0, len(defs))
	for _, d := range defs {
		out = append(out, KeyInfo{
			Key:         d.key,
			Env:         envName(d.key),
			Default:     formatValue(d.def),
			Type:        d.typ,
			Secret:      d.secret,
			Description: d.desc,
		})
	}
	return out
}

// Default returns the built-in configuration.
func Default() Config {
	var c Config
	for _, d := range keyTable() {
		// Defaults are typed by construction; assign cannot fail.
		_ = assign(d, &c, d.def)
	}
	return c
}
