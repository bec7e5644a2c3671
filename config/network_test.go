package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestNetworkDefaults(t *testing.T) {
	c := Default()
	if c.Network.Mode != NetworkAllowlist {
		t.Errorf("network.mode default = %q, want allowlist", c.Network.Mode)
	}
	if !reflect.DeepEqual(c.Network.Presets, []string{"agent", "github", "packages"}) {
		t.Errorf("network.presets default = %v", c.Network.Presets)
	}
	if len(c.Network.Allow) != 0 || len(c.Network.Resolve) != 0 || c.Network.UpstreamCA != "" {
		t.Errorf("network defaults not empty: %+v", c.Network)
	}
	if c.Tools.Network != "none" {
		t.Errorf("tools.network default = %q; tool sessions keep none", c.Tools.Network)
	}
}

// Each network key layers file < environment < flag, and Origin gives the
// file's line.
func TestNetworkPrecedence(t *testing.T) {
	opts, dir := hermetic(t)
	file := writeFile(t, filepath.Join(dir, "c.toml"), `image = "x"

[network]
mode = "none"
allow = ["file.example.com", "*.file.example:8443"]
presets = ["github"]
resolve = ["file.example.com=127.0.0.1"]
upstream_ca = "/file/ca.pem"
`)
	opts.ConfigPath = file
	l := mustLoad(t, opts)
	c := l.Config.Network
	if c.Mode != NetworkNone || !reflect.DeepEqual(c.Allow, []string{"file.example.com", "*.file.example:8443"}) ||
		!reflect.DeepEqual(c.Presets, []string{"github"}) || !reflect.DeepEqual(c.Resolve, []string{"file.example.com=127.0.0.1"}) ||
		c.UpstreamCA != "/file/ca.pem" {
		t.Errorf("file layer: %+v", c)
	}
	for key, line := range map[string]int{"network.mode": 4, "network.allow": 5, "network.presets": 6, "network.resolve": 7, "network.upstream_ca": 8} {
		if got, want := l.Origin(key), file+":"+string(rune('0'+line)); got != want {
			t.Errorf("Origin(%s) = %q, want %q", key, got, want)
		}
	}
	if got := l.Origin("image"); got != file+":1" {
		t.Errorf("Origin(image) = %q", got)
	}
	if got := l.Origin("sandbox.memory"); got != SourceDefault {
		t.Errorf("Origin of a default = %q", got)
	}

	opts.Environ = []string{
		"PODBOT_NETWORK_MODE=allowlist",
		"PODBOT_NETWORK_ALLOW=env.example.com, env.example.org:22",
		"PODBOT_NETWORK_PRESETS=,",
		"PODBOT_NETWORK_RESOLVE=env.example.com=[::1]:8443",
		"PODBOT_NETWORK_UPSTREAM_CA=/env/ca.pem",
	}
	l = mustLoad(t, opts)
	c = l.Config.Network
	if c.Mode != NetworkAllowlist || !reflect.DeepEqual(c.Allow, []string{"env.example.com", "env.example.org:22"}) ||
		len(c.Presets) != 0 || !reflect.DeepEqual(c.Resolve, []string{"env.example.com=[::1]:8443"}) || c.UpstreamCA != "/env/ca.pem" {
		t.Errorf("env layer: %+v", c)
	}
	for _, key := range []string{"network.mode", "network.allow", "network.presets", "network.resolve", "network.upstream_ca"} {
		if l.Origin(key) != envName(key) {
			t.Errorf("Origin(%s) = %q, want %s", key, l.Origin(key), envName(key))
		}
	}

	opts.Flags = map[string]string{
		"network.mode":        "open",
		"network.allow":       "flag.example.com",
		"network.presets":     "agent,packages",
		"network.resolve":     "flag.example.com=10.0.0.1",
		"network.upstream_ca": "/flag/ca.pem",
	}
	opts.FlagNames = map[string]string{"network.mode": "--network"}
	l = mustLoad(t, opts)
	c = l.Config.Network
	if c.Mode != NetworkOpen || !reflect.DeepEqual(c.Allow, []string{"flag.example.com"}) ||
		!reflect.DeepEqual(c.Presets, []string{"agent", "packages"}) || !reflect.DeepEqual(c.Resolve, []string{"flag.example.com=10.0.0.1"}) ||
		c.UpstreamCA != "/flag/ca.pem" {
		t.Errorf("flag layer: %+v", c)
	}
	if l.Origin("network.mode") != "--network" || l.Origin("network.allow") != SourceFlag {
		t.Errorf("flag origins: %q %q", l.Origin("network.mode"), l.Origin("network.allow"))
	}
}

// A bad value names its key, the bad entry and where it came from.
func TestNetworkBadInput(t *testing.T) {
	opts, dir := hermetic(t)
	cases := []struct {
		name, toml string
		env        []string
		key        string
		reason     error
		fragments  []string
	}{
		{name: "mode", toml: "[network]\nmode = \"closed\"\n", key: "network.mode", reason: errdefs.ErrInvalidValue,
			fragments: []string{`"closed"`, "allowlist, none or open", ":2"}},
		{name: "mode type", toml: "[network]\nmode = true\n", key: "network.mode", reason: errdefs.ErrInvalidValue},
		{name: "rule", toml: "[network]\nallow = [\"ok.example.com\", \"https://bad.example.com/x\"]\n", key: "network.allow",
			reason: errdefs.ErrInvalidValue, fragments: []string{`"https://bad.example.com/x"`}},
		{name: "rule in env", env: []string{"PODBOT_NETWORK_ALLOW=ok.example.com,a.*.example.com"}, key: "network.allow",
			reason: errdefs.ErrInvalidValue, fragments: []string{`"a.*.example.com"`, "PODBOT_NETWORK_ALLOW"}},
		{name: "allow not a list", toml: "[network]\nallow = \"example.com\"\n", key: "network.allow", reason: errdefs.ErrInvalidValue},
		{name: "preset", toml: "[network]\npresets = [\"agent\", \"internet\"]\n", key: "network.presets",
			reason: errdefs.ErrInvalidValue, fragments: []string{`"internet"`, "agent, github, packages"}},
		{name: "pin", env: []string{"PODBOT_NETWORK_RESOLVE=example.com:127.0.0.1"}, key: "network.resolve",
			reason: errdefs.ErrInvalidValue, fragments: []string{`"example.com:127.0.0.1"`, "host=address"}},
		{name: "pin wildcard", toml: "[network]\nresolve = [\"*.example.com=127.0.0.1\"]\n", key: "network.resolve",
			reason: errdefs.ErrInvalidValue, fragments: []string{`"*.example.com=127.0.0.1"`}},
		{name: "upstream ca relative", toml: "[network]\nupstream_ca = \"ca.pem\"\n", key: "network.upstream_ca",
			reason: errdefs.ErrInvalidValue, fragments: []string{`"ca.pem"`, "absolute"}},
		{name: "bridge under the default allowlist", toml: "[sandbox]\nnetwork = \"bridge\"\n", key: "sandbox.network",
			reason: errdefs.ErrConflict, fragments: []string{"network.mode", `"allowlist"`, "open"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			o.ConfigPath = ""
			if tc.toml != "" {
				o.ConfigPath = writeFile(t, filepath.Join(dir, tc.name+".toml"), tc.toml)
			}
			o.Environ = tc.env
			_, err := Load(o)
			configErr(t, err, tc.key, tc.reason, append([]string{tc.key}, tc.fragments...)...)
		})
	}
}

// network.mode = "open" loads, with a warning naming where it was set;
// allowlist and none warn of nothing.
func TestNetworkOpenWarns(t *testing.T) {
	opts, _ := hermetic(t)
	l := mustLoad(t, opts)
	if len(l.EgressWarnings()) != 0 || len(l.Warnings) != 0 {
		t.Errorf("default config warns: %v", l.Warnings)
	}
	opts.Flags = map[string]string{"network.mode": "open", "sandbox.network": "bridge"}
	opts.FlagNames = map[string]string{"network.mode": "--network"}
	l = mustLoad(t, opts)
	w := l.EgressWarnings()
	if len(w) != 1 || !strings.Contains(w[0], "--network") || !strings.Contains(w[0], "no egress control") {
		t.Fatalf("EgressWarnings = %q", w)
	}
	if !reflect.DeepEqual(l.Warnings, w) {
		t.Errorf("Warnings = %q, want the egress warning", l.Warnings)
	}
	// sandbox.network = none takes the network away whatever the mode.
	opts.Flags["sandbox.network"] = "none"
	if w := mustLoad(t, opts).EgressWarnings(); len(w) != 0 {
		t.Errorf("open mode without a network warns: %q", w)
	}
}

// ValidateNetwork checks a Config that Load did not make.
func TestValidateNetwork(t *testing.T) {
	c := Default()
	if err := c.ValidateNetwork(); err != nil {
		t.Fatal(err)
	}
	c.Network.Allow = []string{"bad host"}
	c.Sandbox.Network = "corp-net"
	err := c.ValidateNetwork()
	configErr(t, err, "network.allow", errdefs.ErrInvalidValue, `"bad host"`, "sandbox.network", "corp-net")
}
