package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/podbot/podbot/config"
)

const noEngine = "PODBOT_ENGINE_SOCKET=unix:///nonexistent/podbot.sock"

func TestEgressFlags(t *testing.T) {
	var ro *runOptions
	if err := parse(t, newRunCmd(nil, func(_ context.Context, o *runOptions) error { ro = o; return nil }),
		"--allow-host", "api.example.com", "--allow-host", "*.cdn.example.com:8443", "--network", "allowlist"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ro.egress.allowHosts, []string{"api.example.com", "*.cdn.example.com:8443"}) ||
		!reflect.DeepEqual(ro.configOverrides(), map[string]string{"network.mode": "allowlist"}) {
		t.Errorf("run: %+v, overrides %v", ro.egress, ro.configOverrides())
	}

	var ho *hostOptions
	if err := parse(t, newHostCmd(nil, func(_ context.Context, o *hostOptions) error { ho = o; return nil }),
		"--network", "open", "--allow-host", "model.example:8443"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ho.egress.allowHosts, []string{"model.example:8443"}) || ho.configOverrides()["network.mode"] != "open" {
		t.Errorf("host: %+v", ho.egress)
	}

	for _, tc := range []struct {
		args      []string
		overrides map[string]string
		network   string
	}{
		{[]string{"--network", "allowlist", "--allow-host", "pypi.org"}, map[string]string{"network.mode": "allowlist"}, ""},
		{[]string{"--network", "open"}, map[string]string{"network.mode": "open"}, ""},
		{[]string{"--network", "none"}, map[string]string{"network.mode": "none"}, "none"},
		{[]string{"--network", "corp-net"}, map[string]string{}, "corp-net"},
	} {
		var co *createOptions
		if err := parse(t, newCreateCmd(nil, func(_ context.Context, o *createOptions) error { co = o; return nil }), tc.args...); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(co.configOverrides(), tc.overrides) {
			t.Errorf("create %v: overrides %v, want %v", tc.args, co.configOverrides(), tc.overrides)
		}
		cfg := config.Default()
		cfg.Network.Mode = config.NetworkOpen // so an engine network is allowed
		lib, err := co.toLibrary(cfg, "")
		if err != nil || lib.Network != tc.network || !reflect.DeepEqual(lib.AllowHosts, co.egress.allowHosts) {
			t.Errorf("create %v: library %+v, %v", tc.args, lib, err)
		}
	}

	// Malformed --allow-host values are usage errors before anything runs.
	for _, cmd := range []func() error{
		func() error {
			return parse(t, newRunCmd(nil, func(context.Context, *runOptions) error { return nil }), "--allow-host", "https://x.example/")
		},
		func() error {
			return parse(t, newHostCmd(nil, func(context.Context, *hostOptions) error { return nil }), "--allow-host", "*.com")
		},
		func() error {
			return parse(t, newCreateCmd(nil, func(context.Context, *createOptions) error { return nil }), "--allow-host", "a b")
		},
		func() error {
			return parse(t, newCreateCmd(nil, func(context.Context, *createOptions) error { return nil }), "--network", "")
		},
	} {
		if err := cmd(); !isUsage(err) || !strings.Contains(err.Error(), "--") {
			t.Errorf("err = %v, want a usage error naming the flag", err)
		}
	}
}

// create --network bridge under the default allowlist is refused with a
// way out, before the engine is asked.
func TestCreateEngineNetworkNeedsOpen(t *testing.T) {
	code, out, errOut := run(t, []string{noEngine}, "create", "--network", "bridge")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "--network open") || !strings.Contains(errOut, `"allowlist"`) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = run(t, []string{noEngine, "PODBOT_NETWORK_MODE=open"}, "create", "--network", "bridge")
	if code == exitUsage || strings.Contains(errOut, "--network open") {
		t.Errorf("open mode refused an engine network: exit %d, %q", code, errOut)
	}
}

// --network open is a warning on stderr for run, host and create; a bad
// mode is a configuration error naming network.mode and the flag.
func TestNetworkFlagWarnsAndValidates(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--network", "open", "--agent", "codex"},
		{"host", "--network", "open", "--agent", "codex", "--agent-mode", "codex_app_server"},
		{"create", "--network", "open"},
	} {
		_, out, errOut := run(t, []string{noEngine}, args...)
		if out != "" || !strings.Contains(errOut, "no egress control") || !strings.Contains(errOut, "--network") {
			t.Errorf("%v: stdout %q, stderr %q; want the open-mode warning naming --network", args, out, errOut)
		}
		_, _, errOut = run(t, []string{noEngine}, args[0], "--network", "allowlist")
		if strings.Contains(errOut, "no egress control") {
			t.Errorf("%s --network allowlist warned: %q", args[0], errOut)
		}
	}
	code, out, errOut := run(t, []string{noEngine}, "run", "--network", "closed")
	if code != exitConfig || out != "" || !strings.Contains(errOut, "network.mode") || !strings.Contains(errOut, "--network") {
		t.Errorf("bad mode: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = run(t, []string{noEngine, "PODBOT_NETWORK_PRESETS=agent,all"}, "run")
	if code != exitConfig || !strings.Contains(errOut, "network.presets") || !strings.Contains(errOut, `"all"`) {
		t.Errorf("bad preset: exit %d, stderr %q", code, errOut)
	}
}

func TestConfigShowEgress(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(`[agent]
kind = "codex"

[network]
presets = ["agent"]
allow = ["mock.example:8443", "*.corp.example"]
resolve = ["mock.example=127.0.0.1:9443"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, []string{"PODBOT_NETWORK_PRESETS=agent,github"}, "--config", cfg, "config", "show")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	egressPart := out[strings.Index(out, "egress mode"):]
	for _, want := range []string{
		"egress mode allowlist (network.mode from default)",
		"api.openai.com", "preset agent", "PODBOT_NETWORK_PRESETS",
		"github.com", "preset github",
		"mock.example:8443", "network.allow", cfg + ":6",
		"*.corp.example",
		"mock.example = 127.0.0.1:9443",
	} {
		if !strings.Contains(egressPart, want) {
			t.Errorf("config show lacks %q:\n%s", want, egressPart)
		}
	}
	if strings.Contains(egressPart, "api.anthropic.com") || strings.Contains(egressPart, "registry.npmjs.org") {
		t.Errorf("config show lists rules of presets not selected:\n%s", egressPart)
	}

	code, out, errOut = run(t, nil, "--config", cfg, "config", "show", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Egress struct {
			Mode       string `json:"mode"`
			ModeOrigin string `json:"mode_origin"`
			Rules      []struct {
				Rule, Source, Origin string
			} `json:"rules"`
			Resolve []struct {
				Host, Address string
			} `json:"resolve"`
		} `json:"egress"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := map[string]string{}
	for _, r := range doc.Egress.Rules {
		got[r.Rule] = r.Source + " @ " + r.Origin
	}
	want := map[string]string{
		"api.openai.com":    "preset agent @ " + cfg + ":5",
		"mock.example:8443": "network.allow @ " + cfg + ":6",
		"*.corp.example":    "network.allow @ " + cfg + ":6",
	}
	for rule, w := range want {
		if got[rule] != w {
			t.Errorf("rule %s: %q, want %q (all: %v)", rule, got[rule], w, got)
		}
	}
	if doc.Egress.Mode != "allowlist" || doc.Egress.ModeOrigin != "default" || len(doc.Egress.Resolve) != 1 ||
		doc.Egress.Resolve[0].Host != "mock.example" || doc.Egress.Resolve[0].Address != "127.0.0.1:9443" {
		t.Errorf("egress %+v", doc.Egress)
	}

	code, out, errOut = run(t, []string{"PODBOT_NETWORK_MODE=open"}, "--config", cfg, "config", "show")
	if code != 0 || !strings.Contains(out, "egress mode open (network.mode from PODBOT_NETWORK_MODE)") || !strings.Contains(out, "no egress control") {
		t.Errorf("open mode: exit %d\n%s\n%s", code, out, errOut)
	}
}
