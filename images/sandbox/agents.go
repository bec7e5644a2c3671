package sandboximage

import _ "embed"

// The agent image: the sandbox image plus Podman for nested containers,
// Node.js and the agent CLIs. It is built FROM the default sandbox image.
//
//go:embed Containerfile.agents
var AgentsContainerfile []byte

// NestedContainersConf and NestedStorageConf configure the inner Podman
// (/etc/containers/containers.conf and storage.conf in the agent image).
var (
	//go:embed nested-containers.conf
	NestedContainersConf []byte
	//go:embed nested-storage.conf
	NestedStorageConf []byte
)

const (
	// AgentImageName is the repository of the agent image, tagged with
	// podbot's version and with LatestTag.
	AgentImageName = "localhost/podbot-agent"
	// AgentsContainerfileName is the agent image's Containerfile in its
	// build context; the context also holds the two nested-*.conf files
	// and a ca/ directory of extra CA certificates.
	AgentsContainerfileName = "Containerfile.agents"
	// NestedContainersConfName and NestedStorageConfName are the inner
	// Podman's configuration files in the build context.
	NestedContainersConfName = "nested-containers.conf"
	NestedStorageConfName    = "nested-storage.conf"
	// CADir is the build-context directory of extra CA certificates.
	CADir = "ca"

	// AgentsArg names the build argument listing the agent CLIs to install.
	AgentsArg = "PODBOT_AGENTS"
	// AgentsLabel is the image label listing the installed agent CLIs.
	AgentsLabel = "podbot.agents"

	// AgentUser is the non-root user of the agent image (uid 1000) with
	// subordinate id ranges, for rootless inner Podman.
	AgentUser = "agent"
)

// AgentCLI is an agent command-line tool the agent image can carry.
type AgentCLI struct {
	// Name is what podbot image build --agents takes (claude, codex).
	Name string
	// Package is the npm package and VersionArg the build argument that
	// carries Version into the Containerfile.
	Package, VersionArg string
	// Version is the pinned npm version.
	Version string
}

// AgentCLIs lists the agent CLIs with their pinned versions: the one place
// these versions are set.
func AgentCLIs() []AgentCLI {
	return []AgentCLI{
		{Name: "claude", Package: "@anthropic-ai/claude-code", VersionArg: "CLAUDE_CODE_VERSION", Version: "2.1.330"},
		{Name: "codex", Package: "@openai/codex", VersionArg: "CODEX_VERSION", Version: "0.169.0"},
	}
}
