package launchplan

// Defaults for agent containers (interactive and hosting intents).
const (
	// AgentPidsLimit is the default process limit for agents.
	AgentPidsLimit = 2048
	// AgentMemoryBytes is the default memory limit for agents (4 GiB).
	AgentMemoryBytes = 4 << 30
	// AgentNanoCPUs is the default CPU limit for agents (2 CPUs).
	AgentNanoCPUs = 2_000_000_000
)

// Defaults for tool-session containers.
const (
	// ToolsUser is the user tool sessions run as (nobody:nogroup).
	ToolsUser = "65534:65534"
	// ToolsWorkspace is the tool sessions' workspace, their only bind mount.
	ToolsWorkspace = "/workspace"
	// ToolsPidsLimit is the default process limit for tool sessions.
	ToolsPidsLimit = 512
	// ToolsMemoryBytes is the default memory limit for tool sessions (1 GiB).
	ToolsMemoryBytes = 1 << 30
	// ToolsNanoCPUs is the default CPU limit for tool sessions (1 CPU).
	ToolsNanoCPUs = 1_000_000_000
	// ToolsNetwork is the default network of tool sessions.
	ToolsNetwork = "none"
)

// DefaultHostMountTarget is where a host_mount workspace appears when no
// container path is configured.
const DefaultHostMountTarget = "/workspace"

// intentDefaults are the values an intent uses when the request leaves them unset.
type intentDefaults struct {
	pids, memory, cpus int64
	network, user      string
	readOnlyRootfs     bool
	keepCaps           []string
	stream             StreamPolicy
}

func defaultsFor(intent Intent) intentDefaults {
	switch intent {
	case IntentTools:
		return intentDefaults{
			pids: ToolsPidsLimit, memory: ToolsMemoryBytes, cpus: ToolsNanoCPUs,
			network: ToolsNetwork, user: ToolsUser, readOnlyRootfs: true,
			stream: StreamPolicy{Stdin: true, ProtocolStdout: true},
		}
	case IntentHosting:
		return intentDefaults{
			pids: AgentPidsLimit, memory: AgentMemoryBytes, cpus: AgentNanoCPUs,
			keepCaps: DefaultKeptCapabilities(),
			stream:   StreamPolicy{Stdin: true, ProtocolStdout: true},
		}
	default:
		return intentDefaults{
			pids: AgentPidsLimit, memory: AgentMemoryBytes, cpus: AgentNanoCPUs,
			keepCaps: DefaultKeptCapabilities(),
			stream:   StreamPolicy{TTY: true, Stdin: true},
		}
	}
}

// pick returns def for 0, no limit (0) for a negative value, else v.
func pick(v, def int64) int64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}
