package sandboximage

import (
	"regexp"
	"sort"
	"strings"
)

// AgentVersion is one agent an agent image holds, with its version.
type AgentVersion struct {
	// Name is the --agents name (claude, opencode, goose, ...).
	Name string `json:"name"`
	// Version is the pinned version installed.
	Version string `json:"version"`
}

// maxAgentVersionsLabel bounds the label ParseAgentVersions reads: an
// image's labels come from whoever built it.
const maxAgentVersionsLabel = 4096

var (
	agentNameRE    = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)
	agentVersionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$`)
)

// ValidAgentVersion reports whether v may appear as a version in the
// AgentVersionsLabel: letters, digits and . _ + -, at most 64 characters.
func ValidAgentVersion(v string) bool { return agentVersionRE.MatchString(v) }

// FormatAgentVersions writes the AgentVersionsLabel value: name=version
// pairs sorted by name, comma separated.
func FormatAgentVersions(list []AgentVersion) string {
	parts := make([]string, 0, len(list))
	for _, a := range list {
		parts = append(parts, a.Name+"="+a.Version)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// ParseAgentVersions reads an AgentVersionsLabel value. Malformed entries
// (a name or version outside the allowed characters, a repeated name) and
// anything past the size bound are dropped, not reported: the label is a
// description for display, and an image's labels are not trusted input.
func ParseAgentVersions(label string) []AgentVersion {
	if len(label) > maxAgentVersionsLabel {
		label = label[:maxAgentVersionsLabel]
	}
	var out []AgentVersion
	seen := map[string]bool{}
	for _, part := range strings.Split(label, ",") {
		name, version, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || !agentNameRE.MatchString(name) || !agentVersionRE.MatchString(version) || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, AgentVersion{Name: name, Version: version})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
