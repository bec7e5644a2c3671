package launchplan

import (
	"github.com/podbot/podbot/egress"
)

// Egress is a sandbox's network egress setting: the mode, and in allowlist
// mode the policy podbot's egress proxy enforces.
type Egress struct {
	// Mode is allowlist, none or open; empty leaves the plan's network as
	// the intent's defaults set it (no egress control).
	Mode egress.Mode
	// Policy is what an allowlist sandbox may reach.
	Policy egress.Policy
	// UpstreamCA is the host path of a PEM bundle the proxy trusts upstream
	// besides the system roots (network.upstream_ca); empty adds none.
	UpstreamCA string
}
