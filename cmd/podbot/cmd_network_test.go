package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/egress"
)

func TestLogText(t *testing.T) {
	got := logText([]byte(`{"time":"2026-01-01T00:00:00Z","host":"api.example.com","port":443,"decision":"allow","rule":"api.example.com","bytes_up":10,"bytes_down":20}`))
	for _, want := range []string{"2026-01-01T00:00:00Z", "allow", "api.example.com:443", "up=10", "down=20"} {
		if !strings.Contains(got, want) {
			t.Errorf("logText = %q, lacks %q", got, want)
		}
	}
	if got := logText([]byte("not json\x1b[2J")); !strings.HasPrefix(got, `"not json\x1b`) {
		t.Errorf("non-JSON line = %q, want it quoted", got)
	}
}

func TestPrintPolicyShowsSources(t *testing.T) {
	np := podbot.NetworkPolicy{Sandbox: "sb", Mode: "allowlist", Proxy: "10.89.0.2", PolicyFile: "/p",
		Policy: &egress.Policy{Rules: []egress.Rule{{Host: "api.example.com", Source: "preset agent"}},
			Deny: []egress.Rule{{Host: "evil.test", Source: podbot.SourceLive}}, Resolve: map[string]string{"x.test": "10.0.0.1"}},
		Secrets: []podbot.VaultIndexEntry{{Name: "anthropic", Hosts: []string{"api.anthropic.com"}, Env: "ANTHROPIC_API_KEY"}}}
	var b bytes.Buffer
	if err := printPolicy(&b, np, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sb", "allow:", "preset agent", "deny:", "evil.test", "podbot network", "x.test=10.0.0.1", "secrets", "anthropic", "api.anthropic.com", "$ANTHROPIC_API_KEY"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, b.String())
		}
	}
}

func TestNetworkCommandsTakeTheirArguments(t *testing.T) {
	var got *networkOptions
	run := func(_ context.Context, o *networkOptions) error { got = o; return nil }
	if err := parse(t, newNetworkChangeCmd(nil, "allow", run), "sb", "api.example.com:8443"); err != nil || got.ref != "sb" || got.host != "api.example.com:8443" {
		t.Fatalf("allow: %+v, %v", got, err)
	}
	if err := parse(t, newNetworkLogCmd(nil, run), "--follow", "--json", "sb"); err != nil || !got.follow || !got.json || got.ref != "sb" {
		t.Fatalf("log: %+v, %v", got, err)
	}
	if err := parse(t, newNetworkShowCmd(nil, run), "--json", "sb"); err != nil || !got.json {
		t.Fatalf("show: %+v, %v", got, err)
	}
	if err := parse(t, newNetworkChangeCmd(nil, "deny", run), "sb"); !isUsage(err) {
		t.Fatalf("deny with one argument: %v, want a usage error", err)
	}
}

func TestNetworkUsageExit2(t *testing.T) {
	code, out, _ := run(t, nil, "network", "allow", "only-one")
	if code != exitUsage || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
}
