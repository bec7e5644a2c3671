package egress

import (
	"fmt"
	"net/netip"
	"strings"
)

// Mode is a sandbox's network mode (config network.mode).
type Mode string

const (
	// ModeAllowlist attaches the sandbox to an internal network whose only
	// way out is podbot's egress proxy, which allows the policy's rules.
	ModeAllowlist Mode = "allowlist"
	// ModeNone gives the sandbox no network at all.
	ModeNone Mode = "none"
	// ModeOpen leaves the sandbox on the engine's default network with no
	// egress control (the escape hatch).
	ModeOpen Mode = "open"
)

// ParseMode checks a mode name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case ModeAllowlist, ModeNone, ModeOpen:
		return m, nil
	}
	return "", fmt.Errorf("network mode %q: use allowlist, none or open", s)
}

// Policy is what a sandbox may reach. The zero Policy allows nothing.
type Policy struct {
	// Rules allow hosts and ports.
	Rules []Rule `json:"rules"`
	// Deny refuses hosts even when a rule allows them (live `podbot network
	// deny`); it is checked first.
	Deny []Rule `json:"deny,omitempty"`
	// Resolve pins names to addresses (network.resolve, like curl
	// --resolve): the proxy connects there without asking DNS.
	Resolve map[string]string `json:"resolve,omitempty"`
}

// Decision is the policy's answer for one destination.
type Decision struct {
	// Allowed says whether the connection may be made.
	Allowed bool
	// Rule is the rule that decided (its String), empty when none matched.
	Rule string
	// Reason says why, for the log and the refusal.
	Reason string
}

// Decide says whether host:port may be reached by name. host must be
// normalised (NormalizeHost). Address checks come after resolution
// (CheckAddress).
func (p *Policy) Decide(host string, port int) Decision {
	for _, r := range p.Deny {
		if r.Matches(host, port) {
			return Decision{Rule: r.String(), Reason: "denied by rule " + r.String() + sourceNote(r)}
		}
	}
	for _, r := range p.Rules {
		if r.Matches(host, port) {
			return Decision{Allowed: true, Rule: r.String(), Reason: "allowed by rule " + r.String() + sourceNote(r)}
		}
	}
	return Decision{Reason: fmt.Sprintf("no rule allows %s on port %d", host, port)}
}

func sourceNote(r Rule) string {
	if r.Source == "" {
		return ""
	}
	return " (" + r.Source + ")"
}

// CheckAddress refuses a destination address that is loopback, link-local
// (cloud metadata at 169.254.169.254), private (RFC 1918), unique-local
// (fc00::/7), unspecified or multicast, unless a non-wildcard rule names
// host exactly or names the address itself: a public name that resolves
// to an internal address (DNS rebinding) must not reach the host's or the
// cloud's private services.
func (p *Policy) CheckAddress(host string, port int, addr netip.Addr) error {
	addr = addr.Unmap()
	if !internal(addr) {
		return nil
	}
	for _, r := range p.Rules {
		if !r.Wildcard() && (r.Host == host || r.Host == addr.String()) && r.matchesPort(port) {
			return nil
		}
	}
	return fmt.Errorf("%s resolves to the internal address %s, which only a rule naming that exact host or address allows", host, addr)
}

// internal reports whether addr is one a sandbox must not reach by
// default.
func internal(a netip.Addr) bool {
	return a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsPrivate() ||
		a.IsUnspecified() || a.IsMulticast() || a.IsInterfaceLocalMulticast() ||
		(a.Is4() && (a.As4()[0] == 0 || a.As4()[0] >= 240)) // "this network" and reserved
}

// Pinned returns the address network.resolve pins host to, if any.
func (p *Policy) Pinned(host string) (string, bool) {
	a, ok := p.Resolve[host]
	return a, ok
}

// Clone returns a deep copy, safe to change while the original is in use.
func (p *Policy) Clone() *Policy {
	c := &Policy{Rules: cloneRules(p.Rules), Deny: cloneRules(p.Deny)}
	if p.Resolve != nil {
		c.Resolve = make(map[string]string, len(p.Resolve))
		for k, v := range p.Resolve {
			c.Resolve[k] = v
		}
	}
	return c
}

func cloneRules(rs []Rule) []Rule {
	if rs == nil {
		return nil
	}
	out := make([]Rule, len(rs))
	for i, r := range rs {
		r.Ports = append([]int(nil), r.Ports...)
		out[i] = r
	}
	return out
}

// ParsePin parses one network.resolve entry, "host=address" (the address
// an IP, optionally with a port: "host=127.0.0.1:8443").
func ParsePin(s string) (host, addr string, err error) {
	h, a, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok {
		return "", "", fmt.Errorf("resolve entry %q: expected host=address", s)
	}
	host, okh := NormalizeHost(h)
	if !okh || strings.HasPrefix(host, "*.") {
		return "", "", fmt.Errorf("resolve entry %q: %q is not a host name", s, h)
	}
	if _, err := netip.ParseAddr(strings.Trim(a, "[]")); err == nil {
		return host, strings.Trim(a, "[]"), nil
	}
	if ap, err := netip.ParseAddrPort(a); err == nil {
		return host, ap.String(), nil
	}
	return "", "", fmt.Errorf("resolve entry %q: %q is not an IP address or address:port", s, a)
}
