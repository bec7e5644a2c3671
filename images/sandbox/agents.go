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
	// build context; the context also holds the two nested-*.conf files,
	// a ca/ directory of extra CA certificates and a goose/ directory
	// holding the Goose binary when one was supplied.
	AgentsContainerfileName = "Containerfile.agents"
	// NestedContainersConfName and NestedStorageConfName are the inner
	// Podman's configuration files in the build context.
	NestedContainersConfName = "nested-containers.conf"
	NestedStorageConfName    = "nested-storage.conf"
	// CADir is the build-context directory of extra CA certificates.
	CADir = "ca"
	// GooseDir is the build-context directory that holds the Goose
	// executable (GooseDir/goose) when the build installs Goose.
	GooseDir = "goose"
	// GooseBin is where the agent image installs Goose.
	GooseBin = "/usr/local/bin/goose"

	// AgentsArg names the build argument listing the agent CLIs to install.
	AgentsArg = "PODBOT_AGENTS"
	// NPMSpecsArg names the build argument listing the exact npm package
	// specs (name@version, space separated) the chosen CLIs need.
	NPMSpecsArg = "PODBOT_NPM_SPECS"
	// NodeVersionArg names the build argument carrying NodeVersion.
	NodeVersionArg = "PODBOT_NODE_VERSION"
	// AgentsLabel is the image label listing the installed agent CLIs.
	AgentsLabel = "podbot.agents"
	// AgentVersionsLabel is the image label listing each installed agent
	// with its pinned version, "name=version" comma separated (see
	// FormatAgentVersions); podbot doctor reads it without starting a
	// container.
	AgentVersionsLabel = "podbot.agent-versions"

	// NodeVersion is the Node.js the agent image runs its CLIs on, from
	// the npm registry's node-linux-<arch> package (Debian bookworm's own
	// Node.js is 18, older than several CLIs need).
	NodeVersion = "22.23.3"

	// AgentUser is the non-root user of the agent image (uid 1000) with
	// subordinate id ranges, for rootless inner Podman.
	AgentUser = "agent"

	// GooseName is the --agents name of Goose, which no reachable registry
	// publishes: it is installed from an artifact the operator supplies.
	GooseName = "goose"
)

// NPMPackage is one npm package pinned to an exact version.
type NPMPackage struct {
	// Name is the package name and Version its exact version.
	Name, Version string
}

// Spec is the package's npm install argument, name@version.
func (p NPMPackage) Spec() string { return p.Name + "@" + p.Version }

// AgentCLI is an agent command-line tool the agent image can carry.
type AgentCLI struct {
	// Name is what podbot image build --agents takes (claude, codex, ...).
	Name string
	// Packages are the npm packages installed for it; the first is the
	// agent itself and gives Version.
	Packages []NPMPackage
	// Bin is the executable the CLI puts on PATH (the ACP server for the
	// adapters).
	Bin string
}

// Version is the CLI's pinned version: its first package's.
func (c AgentCLI) Version() string {
	if len(c.Packages) == 0 {
		return ""
	}
	return c.Packages[0].Version
}

// AgentCLIs lists the agent CLIs with their pinned versions: the one place
// these versions are set.
func AgentCLIs() []AgentCLI {
	return []AgentCLI{
		{Name: "claude", Bin: "claude", Packages: []NPMPackage{{"@anthropic-ai/claude-code", "2.1.330"}}},
		{Name: "codex", Bin: "codex", Packages: []NPMPackage{{"@openai/codex", "0.169.0"}}},
		{Name: "opencode", Bin: "opencode", Packages: []NPMPackage{{"opencode-ai", "1.18.33"}}},
		// Factory's droid CLI and the community ACP bridge that drives it
		// (droid-acp, which runs droid in its stream-jsonrpc mode).
		{Name: "droid", Bin: "droid-acp", Packages: []NPMPackage{{"droid", "0.215.0"}, {"@yaonyan/droid-acp", "0.0.8"}}},
		{Name: "claude-acp", Bin: "claude-code-acp", Packages: []NPMPackage{{"@zed-industries/claude-code-acp", "0.16.2"}}},
		{Name: "codex-acp", Bin: "codex-acp", Packages: []NPMPackage{{"@zed-industries/codex-acp", "0.16.0"}}},
		{Name: "gemini", Bin: "gemini", Packages: []NPMPackage{{"@google/gemini-cli", "0.61.0"}}},
	}
}

// LookupAgentCLI returns the CLI named name.
func LookupAgentCLI(name string) (AgentCLI, bool) {
	for _, c := range AgentCLIs() {
		if c.Name == name {
			return c, true
		}
	}
	return AgentCLI{}, false
}
