package egress

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
)

func TestParseRule(t *testing.T) {
	good := []struct {
		in, host string
		ports    []int
		str      string
	}{
		{"example.com", "example.com", nil, "example.com"},
		{"Example.COM.", "example.com", nil, "example.com"},
		{"example.com:8443", "example.com", []int{8443}, "example.com:8443"},
		{"*.example.com", "*.example.com", nil, "*.example.com"},
		{"*.example.com:443", "*.example.com", []int{443}, "*.example.com:443"},
		{"10.0.0.1", "10.0.0.1", nil, "10.0.0.1"},
		{"10.0.0.1:22", "10.0.0.1", []int{22}, "10.0.0.1:22"},
		{"2001:db8::1", "2001:db8::1", nil, "[2001:db8::1]"},
		{"[2001:db8::1]:443", "2001:db8::1", []int{443}, "[2001:db8::1]:443"},
		{"::ffff:10.0.0.1", "10.0.0.1", nil, "10.0.0.1"},
		{"my_host.internal", "my_host.internal", nil, "my_host.internal"},
	}
	for _, g := range good {
		r, err := ParseRule(g.in)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", g.in, err)
			continue
		}
		if r.Host != g.host || !slices.Equal(r.Ports, g.ports) || r.String() != g.str {
			t.Errorf("ParseRule(%q) = %+v (%s), want host %q ports %v (%s)", g.in, r, r, g.host, g.ports, g.str)
		}
	}
	for _, in := range []string{"", " ", "*", "*.com", "a.*.com", "ex*ample.com", "example.com:0", "example.com:65536",
		"example.com:http", "https://example.com", "example.com/path", "user@example.com", "[10.0.0.1]:443",
		"[2001:db8::1", "2001:db8::1:443x", "fe80::1%eth0", "-bad.com", "bad-.com", "a..b", "exa mple.com"} {
		_, err := ParseRule(in)
		if !errors.Is(err, ErrBadRule) {
			t.Errorf("ParseRule(%q) = %v, want ErrBadRule", in, err)
		}
	}
}

func TestRuleMatches(t *testing.T) {
	must := func(s string) Rule {
		r, err := ParseRule(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tests := []struct {
		rule, host string
		port       int
		want       bool
	}{
		{"example.com", "example.com", 443, true},
		{"example.com", "example.com", 80, true},
		{"example.com", "example.com", 22, false},
		{"example.com", "www.example.com", 443, false},
		{"example.com", "example.com.evil.net", 443, false},
		{"*.example.com", "www.example.com", 443, true},
		{"*.example.com", "a.b.example.com", 443, true},
		{"*.example.com", "example.com", 443, false},
		{"*.example.com", "evilexample.com", 443, false},
		{"*.example.com:8443", "www.example.com", 443, false},
		{"*.example.com:8443", "www.example.com", 8443, true},
	}
	for _, tt := range tests {
		if got := must(tt.rule).Matches(tt.host, tt.port); got != tt.want {
			t.Errorf("%s matches %s:%d = %v, want %v", tt.rule, tt.host, tt.port, got, tt.want)
		}
	}
}

func TestPolicyDecide(t *testing.T) {
	allow, _ := ParseRule("*.example.com")
	allow.Source = "network.allow"
	deny, _ := ParseRule("bad.example.com")
	p := &Policy{Rules: []Rule{allow}, Deny: []Rule{deny}}
	if d := p.Decide("api.example.com", 443); !d.Allowed || d.Rule != "*.example.com" {
		t.Errorf("allowed host: %+v", d)
	}
	if d := p.Decide("bad.example.com", 443); d.Allowed || d.Rule != "bad.example.com" {
		t.Errorf("denied host: %+v", d)
	}
	if d := p.Decide("other.net", 443); d.Allowed || d.Rule != "" {
		t.Errorf("unknown host: %+v", d)
	}
	var zero Policy
	if zero.Decide("example.com", 443).Allowed {
		t.Error("the zero policy allowed something")
	}
}

// A name the policy allows must not lead to the host's or the cloud's
// internal services unless a rule names it exactly.
func TestPolicyCheckAddress(t *testing.T) {
	wild, _ := ParseRule("*.example.com")
	exact, _ := ParseRule("internal.example.com")
	byAddr, _ := ParseRule("10.1.2.3:8080")
	p := &Policy{Rules: []Rule{wild}}
	for _, a := range []string{"127.0.0.1", "169.254.169.254", "10.0.0.1", "172.16.5.5", "192.168.1.1", "fd00::1",
		"::1", "fe80::1", "0.0.0.0", "::", "224.0.0.1", "::ffff:127.0.0.1", "100.64.0.1"} {
		addr := netip.MustParseAddr(a)
		err := p.CheckAddress("www.example.com", 443, addr)
		if a == "100.64.0.1" { // shared address space: not refused by default
			if err != nil {
				t.Errorf("%s refused: %v", a, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("www.example.com resolving to %s was allowed", a)
		}
	}
	if err := p.CheckAddress("www.example.com", 443, netip.MustParseAddr("93.184.216.34")); err != nil {
		t.Errorf("public address refused: %v", err)
	}
	p = &Policy{Rules: []Rule{wild, exact, byAddr}}
	if err := p.CheckAddress("internal.example.com", 443, netip.MustParseAddr("10.9.9.9")); err != nil {
		t.Errorf("exactly named host refused: %v", err)
	}
	if err := p.CheckAddress("x.example.com", 443, netip.MustParseAddr("10.9.9.9")); err == nil {
		t.Error("a wildcard let an internal address through")
	}
	if err := p.CheckAddress("10.1.2.3", 8080, netip.MustParseAddr("10.1.2.3")); err != nil {
		t.Errorf("exactly named address refused: %v", err)
	}
	if err := p.CheckAddress("10.1.2.3", 443, netip.MustParseAddr("10.1.2.3")); err == nil {
		t.Error("an address rule allowed another port")
	}
}

func TestParsePin(t *testing.T) {
	for in, want := range map[string][2]string{
		"api.example.com=127.0.0.1":       {"api.example.com", "127.0.0.1"},
		"API.example.com.=127.0.0.1:8443": {"api.example.com", "127.0.0.1:8443"},
		"v6.example.com=[::1]":            {"v6.example.com", "::1"},
		"v6.example.com=[::1]:8443":       {"v6.example.com", "[::1]:8443"},
	} {
		h, a, err := ParsePin(in)
		if err != nil || h != want[0] || a != want[1] {
			t.Errorf("ParsePin(%q) = %q %q %v, want %v", in, h, a, err, want)
		}
	}
	for _, in := range []string{"", "example.com", "=1.2.3.4", "*.example.com=1.2.3.4", "example.com=host.name", "example.com=1.2.3.4:99999"} {
		if _, _, err := ParsePin(in); err == nil {
			t.Errorf("ParsePin(%q) accepted", in)
		}
	}
}

func TestPresetRules(t *testing.T) {
	rs, ok := PresetRules(PresetGitHub, PresetOptions{GitHubAPIURL: "https://ghe.corp.example/api/v3/", GitHubCloneURL: "https://ghe.corp.example/"})
	if !ok || len(rs) != 1 || rs[0].Host != "ghe.corp.example" || rs[0].Source != "preset github" {
		t.Errorf("GHES github preset: %+v", rs)
	}
	rs, _ = PresetRules(PresetGitHub, PresetOptions{GitHubAPIURL: "https://api.github.com", GitHubCloneURL: "https://github.com/"})
	var hosts []string
	for _, r := range rs {
		hosts = append(hosts, r.Host)
	}
	if !slices.Contains(hosts, "github.com") || !slices.Contains(hosts, "codeload.github.com") || !slices.IsSorted(hosts) {
		t.Errorf("github.com preset: %v", hosts)
	}
	if rs, _ := PresetRules(PresetAgent, PresetOptions{AgentKind: "claude"}); len(rs) == 0 || rs[0].Source != "preset agent" {
		t.Errorf("claude agent preset: %+v", rs)
	}
	if rs, ok := PresetRules(PresetAgent, PresetOptions{AgentKind: "custom"}); !ok || len(rs) != 0 {
		t.Errorf("custom agent preset: %+v", rs)
	}
	if _, ok := PresetRules("everything", PresetOptions{}); ok {
		t.Error("unknown preset accepted")
	}
	for _, name := range PresetNames() {
		if _, ok := PresetRules(name, PresetOptions{AgentKind: "codex"}); !ok {
			t.Errorf("preset %s unknown", name)
		}
	}
}

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"example.com", "*.example.com:443", "[::1]:80", "10.0.0.1", "a.*.b", "x:0", "[2001:db8::1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		// What parses prints back to itself.
		r2, err := ParseRule(r.String())
		if err != nil || r2.String() != r.String() {
			t.Fatalf("ParseRule(%q) = %s, which parses back as %s, %v", s, r, r2, err)
		}
		if h, ok := NormalizeHost(r.Host); !r.Wildcard() && (!ok || h != r.Host) {
			t.Fatalf("rule host %q does not normalise to itself (%q, %v)", r.Host, h, ok)
		}
	})
}
