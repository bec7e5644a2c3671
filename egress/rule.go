package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// DefaultPorts are the ports a rule without a port allows.
var defaultPorts = [...]int{443, 80}

// maxHostLen bounds a rule's host (DNS names are at most 253 bytes).
const maxHostLen = 253

// Rule allows connections to one host, or to every host under a domain,
// on some ports.
type Rule struct {
	// Host is a lower-case DNS name, an IP address (IPv6 without brackets),
	// or "*." followed by a domain: any name below that domain, not the
	// domain itself.
	Host string
	// Ports are the ports allowed; empty means 443 and 80.
	Ports []int
	// Source says where the rule came from ("preset agent", "network.allow",
	// "--allow-host", "podbot network allow"), for `config show` and the log.
	Source string
}

// ErrBadRule classes every rule parse failure.
var ErrBadRule = errors.New("bad egress rule")

// RuleError is a rule that could not be parsed.
type RuleError struct {
	// Rule is the text as given (clipped).
	Rule string
	// Msg says what is wrong and what is expected.
	Msg string
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("egress rule %q: %s (expected host, host:port, *.domain or *.domain:port)", e.Rule, e.Msg)
}

// Is reports ErrBadRule.
func (e *RuleError) Is(target error) bool { return target == ErrBadRule }

// ParseRule parses "host", "host:port", "*.domain", "*.domain:port", an IP
// address, "[v6]" or "[v6]:port". Hosts are lower-cased and a trailing dot
// is dropped. Errors are *RuleError.
func ParseRule(s string) (Rule, error) {
	bad := func(msg string) (Rule, error) {
		r := s
		if len(r) > 300 {
			r = r[:300] + "..."
		}
		return Rule{}, &RuleError{Rule: r, Msg: msg}
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return bad("empty")
	}
	host, portText := s, ""
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return bad("unclosed [")
		}
		host, portText = s[1:end], s[end+1:]
		if portText != "" {
			if portText[0] != ':' {
				return bad("junk after ]")
			}
			portText = portText[1:]
		}
		if _, err := netip.ParseAddr(host); err != nil || !strings.Contains(host, ":") {
			return bad("[...] must hold an IPv6 address")
		}
	case strings.Count(s, ":") > 1:
		if _, err := netip.ParseAddr(s); err != nil {
			return bad("IPv6 addresses with a port go in brackets, e.g. [2001:db8::1]:443")
		}
	case strings.Contains(s, ":"):
		host, portText, _ = strings.Cut(s, ":")
	}
	var ports []int
	if portText != "" {
		p, err := strconv.Atoi(portText)
		if err != nil || p < 1 || p > 65535 {
			return bad("port must be a number from 1 to 65535")
		}
		ports = []int{p}
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if addr, err := netip.ParseAddr(host); err == nil {
		if addr.Zone() != "" {
			return bad("an address with a zone cannot be allowed")
		}
		return Rule{Host: addr.Unmap().String(), Ports: ports}, nil
	}
	name := strings.TrimPrefix(host, "*.")
	if strings.Contains(name, "*") {
		return bad("a wildcard may only be a leading \"*.\"")
	}
	if err := checkName(name); err != nil {
		return bad(err.Error())
	}
	if name != host && !strings.Contains(name, ".") {
		return bad("a wildcard needs a domain with a dot, such as *.example.com")
	}
	return Rule{Host: host, Ports: ports}, nil
}

// checkName validates a DNS name: labels of letters, digits, '-' and '_'.
func checkName(name string) error {
	if name == "" || len(name) > maxHostLen {
		return errors.New("host must be 1-253 characters")
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return errors.New("host has an empty or over-long label")
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return errors.New("a label may not start or end with '-'")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("host holds %q; only letters, digits, '-', '_' and '.' are allowed", c)
			}
		}
	}
	return nil
}

// String renders the rule as ParseRule reads it, ports listed when they
// are not the default.
func (r Rule) String() string {
	h := r.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	switch len(r.Ports) {
	case 0:
		return h
	case 1:
		return h + ":" + strconv.Itoa(r.Ports[0])
	}
	parts := make([]string, len(r.Ports))
	for i, p := range r.Ports {
		parts[i] = strconv.Itoa(p)
	}
	return h + ":{" + strings.Join(parts, ",") + "}"
}

// Wildcard reports whether the rule names a domain rather than one host.
func (r Rule) Wildcard() bool { return strings.HasPrefix(r.Host, "*.") }

// Matches reports whether the rule allows host (normalised with
// NormalizeHost) on port.
func (r Rule) Matches(host string, port int) bool {
	if !r.matchesPort(port) {
		return false
	}
	if r.Wildcard() {
		return strings.HasSuffix(host, r.Host[1:]) && len(host) > len(r.Host)-1
	}
	return host == r.Host
}

func (r Rule) matchesPort(port int) bool {
	if len(r.Ports) == 0 {
		return slices.Contains(defaultPorts[:], port)
	}
	return slices.Contains(r.Ports, port)
}

// NormalizeHost lower-cases a host, drops a trailing dot and brackets, and
// writes an IP address in its canonical form, as rules are stored. It
// reports false for a host no rule could name.
func NormalizeHost(host string) (string, bool) {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if addr, err := netip.ParseAddr(host); err == nil {
		if addr.Zone() != "" {
			return "", false
		}
		return addr.Unmap().String(), true
	}
	if checkName(host) != nil {
		return "", false
	}
	return host, true
}

// SplitHostPort splits "host:port" as a CONNECT target or Host header
// gives it, normalising the host; defPort applies when there is no port.
func SplitHostPort(hostport string, defPort int) (string, int, error) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		host, portText = hostport, strconv.Itoa(defPort)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("bad port in %q", hostport)
	}
	h, ok := NormalizeHost(host)
	if !ok {
		return "", 0, fmt.Errorf("bad host in %q", hostport)
	}
	return h, port, nil
}
