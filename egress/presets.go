package egress

import (
	"net/url"
	"sort"

	"github.com/podbot/podbot/agentkind"
)

// Preset names (config network.presets).
const (
	PresetAgent    = "agent"
	PresetGitHub   = "github"
	PresetPackages = "packages"
)

// PresetNames lists every preset, in the order `config show` prints them.
func PresetNames() []string { return []string{PresetAgent, PresetGitHub, PresetPackages} }

// agentHosts returns the agent kind's API and sign-in hosts.
func agentHosts(kind string) []string {
	switch kind {
	case "claude":
		return []string{"api.anthropic.com", "statsig.anthropic.com", "console.anthropic.com", "claude.ai", "*.claude.ai"}
	case "codex":
		return []string{"api.openai.com", "auth.openai.com", "chatgpt.com", "*.chatgpt.com"}
	}
	if k, ok := agentkind.Lookup(kind); ok {
		return append([]string(nil), k.Hosts...)
	}
	return nil
}

// packageHosts are the public package registries an agent installs from.
var packageHosts = []string{
	"registry.npmjs.org", "registry.yarnpkg.com",
	"pypi.org", "files.pythonhosted.org",
	"proxy.golang.org", "sum.golang.org", "storage.googleapis.com",
	"crates.io", "index.crates.io", "static.crates.io",
}

// PresetOptions is what the presets are made from.
type PresetOptions struct {
	// AgentKind selects the agent preset's hosts (claude, codex and the
	// built-in ACP kinds of package agentkind; others contribute none).
	AgentKind string
	// GitHubAPIURL and GitHubCloneURL give the github preset's hosts, so a
	// GitHub Enterprise Server works.
	GitHubAPIURL, GitHubCloneURL string
}

// PresetRules returns the rules of the named preset, each with Source
// "preset NAME". An unknown name returns false.
func PresetRules(name string, o PresetOptions) ([]Rule, bool) {
	var hosts []string
	switch name {
	case PresetAgent:
		hosts = agentHosts(o.AgentKind)
	case PresetGitHub:
		seen := map[string]bool{}
		for _, raw := range []string{o.GitHubAPIURL, o.GitHubCloneURL} {
			if u, err := url.Parse(raw); err == nil && u.Host != "" && !seen[u.Host] {
				seen[u.Host] = true
				hosts = append(hosts, u.Host)
			}
		}
		if seen["github.com"] || seen["api.github.com"] {
			hosts = append(hosts, "github.com", "api.github.com", "codeload.github.com",
				"objects.githubusercontent.com", "raw.githubusercontent.com")
		}
	case PresetPackages:
		hosts = packageHosts
	default:
		return nil, false
	}
	sort.Strings(hosts)
	var rules []Rule
	last := ""
	for _, h := range hosts {
		if h == last {
			continue
		}
		last = h
		r, err := ParseRule(h)
		if err != nil {
			continue // a configured URL's host that no rule can name
		}
		r.Source = "preset " + name
		rules = append(rules, r)
	}
	return rules, true
}
