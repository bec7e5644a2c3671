package podbot

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// ruleSources maps each rule's text to its source.
func ruleSources(eg launchplan.Egress) map[string]string {
	m := map[string]string{}
	for _, r := range eg.Policy.Rules {
		m[r.String()] = r.Source
	}
	return m
}

func TestEgressFromConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		kind        string
		want, avoid string
	}{
		{config.KindClaude, "api.anthropic.com", "api.openai.com"},
		{config.KindCodex, "api.openai.com", "api.anthropic.com"},
		{config.KindCustom, "", "api.anthropic.com"},
	} {
		eg, err := EgressFromConfig(config.Default(), tc.kind)
		if err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		if eg.Mode != egress.ModeAllowlist {
			t.Errorf("%s: mode %q, want allowlist by default", tc.kind, eg.Mode)
		}
		src := ruleSources(eg)
		if tc.want != "" && src[tc.want] != "preset agent" {
			t.Errorf("%s: %s from %q, want preset agent", tc.kind, tc.want, src[tc.want])
		}
		if _, ok := src[tc.avoid]; ok {
			t.Errorf("%s: the agent preset allowed another agent's host %s", tc.kind, tc.avoid)
		}
		if src["github.com"] != "preset github" || src["api.github.com"] != "preset github" {
			t.Errorf("%s: github preset missing: %v", tc.kind, src)
		}
		if src["registry.npmjs.org"] != "preset packages" || src["proxy.golang.org"] != "preset packages" {
			t.Errorf("%s: packages preset missing: %v", tc.kind, src)
		}
	}
}

func TestEgressFromConfigRules(t *testing.T) {
	cfg := config.Default()
	cfg.GitHub.APIURL = "https://ghe.corp.example/api/v3"
	cfg.GitHub.CloneBaseURL = "https://ghe.corp.example/"
	cfg.Network.Presets = []string{"github", "github"}
	cfg.Network.Allow = []string{"mock.internal:8443", "*.corp.example", "ghe.corp.example", "Mock.Internal:8443"}
	cfg.Network.Resolve = []string{"mock.internal=127.0.0.1:9443", "API.corp.example=10.1.2.3"}
	eg, err := EgressFromConfig(cfg, config.KindClaude, "extra.example.com", "mock.internal:8443", "*.corp.example:22")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range eg.Policy.Rules {
		got = append(got, r.String()+" <- "+r.Source)
	}
	want := []string{
		"ghe.corp.example <- preset github", // GHES: the configured hosts, not github.com
		"mock.internal:8443 <- network.allow",
		"*.corp.example <- network.allow",
		"extra.example.com <- --allow-host",
		"*.corp.example:22 <- --allow-host",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if eg.Policy.Resolve["mock.internal"] != "127.0.0.1:9443" || eg.Policy.Resolve["api.corp.example"] != "10.1.2.3" || len(eg.Policy.Resolve) != 2 {
		t.Errorf("pins %v", eg.Policy.Resolve)
	}
	if d := eg.Policy.Decide("api.anthropic.com", 443); d.Allowed {
		t.Errorf("the agent preset is off but its host was allowed: %+v", d)
	}

	cfg.Network.Presets = []string{}
	cfg.Network.Allow = nil
	eg, err = EgressFromConfig(cfg, config.KindClaude)
	if err != nil || eg.Mode != egress.ModeAllowlist || len(eg.Policy.Rules) != 0 {
		t.Errorf("no presets, no rules: %+v, %v", eg, err)
	}
	if eg.Policy.Decide("github.com", 443).Allowed {
		t.Error("an empty allowlist allowed github.com")
	}
}

func TestEgressFromConfigModes(t *testing.T) {
	cfg := config.Default()
	cfg.Network.Mode = config.NetworkOpen
	if eg, err := EgressFromConfig(cfg, config.KindClaude); err != nil || eg.Mode != egress.ModeOpen || len(eg.Policy.Rules) != 0 {
		t.Errorf("open: %+v, %v", eg, err)
	}
	cfg.Sandbox.Network = "bridge" // an engine network is what open mode is for
	if eg, err := EgressFromConfig(cfg, config.KindClaude); err != nil || eg.Mode != egress.ModeOpen {
		t.Errorf("open with bridge: %+v, %v", eg, err)
	}
	cfg.Sandbox.Network = "none" // no network beats any mode
	if eg, err := EgressFromConfig(cfg, config.KindClaude); err != nil || eg.Mode != egress.ModeNone {
		t.Errorf("open with sandbox.network none: %+v, %v", eg, err)
	}
	cfg = config.Default()
	cfg.Network.Mode = config.NetworkNone
	if eg, err := EgressFromConfig(cfg, config.KindClaude); err != nil || eg.Mode != egress.ModeNone || len(eg.Policy.Rules) != 0 {
		t.Errorf("none: %+v, %v", eg, err)
	}
	// --allow-host means nothing outside allowlist mode: refused, not ignored.
	_, err := EgressFromConfig(cfg, config.KindClaude, "example.com")
	var ce *errdefs.ConfigError
	if !errors.As(err, &ce) || ce.Source != "--allow-host" || !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), `"none"`) {
		t.Errorf("--allow-host in mode none: %v", err)
	}
	// A Config that no loader made has no egress setting.
	if eg, err := EgressFromConfig(config.Config{Image: "img"}, ""); err != nil || eg.Mode != "" {
		t.Errorf("zero config: %+v, %v", eg, err)
	}
}

func TestEgressFromConfigRefuses(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*config.Config)
		allow  []string
		key    string
		frag   string
	}{
		{"bad flag rule", func(*config.Config) {}, []string{"https://evil.example"}, "network.allow", `"https://evil.example"`},
		{"bad config rule", func(c *config.Config) { c.Network.Allow = []string{"a b"} }, nil, "network.allow", `"a b"`},
		{"bad preset", func(c *config.Config) { c.Network.Presets = []string{"all"} }, nil, "network.presets", `"all"`},
		{"bad pin", func(c *config.Config) { c.Network.Resolve = []string{"x.example=name"} }, nil, "network.resolve", `"x.example=name"`},
		{"bad mode", func(c *config.Config) { c.Network.Mode = "closed" }, nil, "network.mode", `"closed"`},
		{"bridge under allowlist", func(c *config.Config) { c.Sandbox.Network = "bridge" }, nil, "sandbox.network", "network.mode"},
		{"missing upstream ca", func(c *config.Config) { c.Network.UpstreamCA = "/nonexistent/ca.pem" }, nil, "network.upstream_ca", "does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			tc.mutate(&cfg)
			_, err := EgressFromConfig(cfg, config.KindClaude, tc.allow...)
			var ce *errdefs.ConfigError
			if !errors.As(err, &ce) || ce.Key != tc.key || !strings.Contains(err.Error(), tc.frag) {
				t.Errorf("err = %v, want a ConfigError for %s naming %s", err, tc.key, tc.frag)
			}
		})
	}
}

// testCA writes a self-signed CA certificate as PEM and returns its path.
func testCA(t *testing.T, dir string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckUpstreamCA(t *testing.T) {
	dir := t.TempDir()
	ca := testCA(t, dir)
	cfg := config.Default()
	cfg.Network.UpstreamCA = ca
	eg, err := EgressFromConfig(cfg, config.KindClaude)
	if err != nil || eg.UpstreamCA != ca {
		t.Fatalf("good CA: %+v, %v", eg.UpstreamCA, err)
	}
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	keyOnly := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(keyOnly, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}}), 0o600); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2, 3}}), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.pem")
	if err := os.WriteFile(big, make([]byte, maxUpstreamCABytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, frag := range map[string]string{
		filepath.Join(dir, "missing.pem"): "does not exist",
		dir:                               "not a regular file",
		notPEM:                            "no PEM certificate",
		keyOnly:                           "no PEM certificate",
		garbage:                           "does not parse",
		big:                               "larger than",
	} {
		err := CheckUpstreamCA(path)
		var ce *errdefs.ConfigError
		if !errors.As(err, &ce) || ce.Key != "network.upstream_ca" || !strings.Contains(err.Error(), frag) || !strings.Contains(err.Error(), path) {
			t.Errorf("CheckUpstreamCA(%s) = %v, want a network.upstream_ca error with %q", path, err, frag)
		}
	}
}

// run, host and create put the egress setting into the plan; mode none
// also takes the network away.
func TestEgressInLaunchPlans(t *testing.T) {
	conn, err := engine.Connect(context.Background(), engine.Endpoint{Raw: "tcp://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cfg := config.Default()
	cfg.Agent.Kind = config.KindCodex
	req, _, err := launchRequest(conn, LaunchOptions{Config: cfg, Intent: launchplan.IntentInteractive, AllowHosts: []string{"mock.example:8443"}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := launchplan.Normalize(req)
	if err != nil {
		t.Fatal(err)
	}
	src := ruleSources(plan.Egress)
	if plan.Egress.Mode != egress.ModeAllowlist || src["api.openai.com"] != "preset agent" || src["mock.example:8443"] != "--allow-host" {
		t.Errorf("run plan egress: %+v", plan.Egress)
	}
	if plan.Network != "" {
		t.Errorf("plan network %q: the network stays as it was until enforcement reads Plan.Egress", plan.Network)
	}
	_, _, err = launchRequest(conn, LaunchOptions{Config: cfg, AllowHosts: []string{"bad host"}})
	if !errors.Is(err, errdefs.ErrConfig) {
		t.Errorf("bad --allow-host: %v", err)
	}

	cr, err := CreateRequest(engine.Endpoint{}, CreateOptions{Config: cfg, SessionID: "s", AllowHosts: []string{"x.example"}})
	if err != nil {
		t.Fatal(err)
	}
	if cr.Egress.Mode != egress.ModeAllowlist || ruleSources(cr.Egress)["x.example"] != "--allow-host" {
		t.Errorf("create egress: %+v", cr.Egress)
	}
	cr, err = CreateRequest(engine.Endpoint{}, CreateOptions{Config: cfg, SessionID: "s", Network: "none"})
	if err != nil || cr.Egress.Mode != egress.ModeNone || cr.Sandbox.Network != "none" {
		t.Errorf("create --network none: %+v %q, %v", cr.Egress, cr.Sandbox.Network, err)
	}
	_, err = CreateRequest(engine.Endpoint{}, CreateOptions{Config: cfg, SessionID: "s", Network: "bridge"})
	if !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("create on bridge under allowlist: %v", err)
	}
	cfg.Network.Mode = config.NetworkNone
	req, _, err = launchRequest(conn, LaunchOptions{Config: cfg})
	if err != nil || req.Egress.Mode != egress.ModeNone || req.Sandbox.Network != "none" {
		t.Errorf("run in mode none: %+v %q, %v", req.Egress, req.Sandbox.Network, err)
	}
}

// Secrets: env: and file: sources pass to the launch (which applies the
// vault), and so does one github-app secret; a second github-app secret
// is refused naming its key; a mode without the proxy is refused.
func TestEgressFromConfigSecrets(t *testing.T) {
	cfg := config.Default()
	cfg.Network.Mode = "allowlist"
	cfg.Secrets = []config.Secret{{Name: "anthropic", Source: "env:ANTHROPIC_API_KEY", Hosts: []string{"api.anthropic.com"}, Header: "x-api-key: {}"}}
	if _, err := EgressFromConfig(cfg, "claude"); err != nil {
		t.Fatalf("env: secret refused: %v", err)
	}
	gh := cfg
	gh.GitHub.AppID, gh.GitHub.InstallationID, gh.GitHub.PrivateKeyPath = 1, 2, "/k.pem"
	gh.Secrets = append([]config.Secret{}, cfg.Secrets...)
	gh.Secrets = append(gh.Secrets, config.Secret{Name: "gh", Source: "github-app", Hosts: []string{"github.com"}, BasicAuthUser: "x-access-token"})
	if _, err := EgressFromConfig(gh, "claude"); err != nil {
		t.Fatalf("github-app secret refused: %v", err)
	}
	gh.Secrets = append(gh.Secrets, config.Secret{Name: "gh2", Source: "github-app", Hosts: []string{"github.com"}, BasicAuthUser: "x-access-token"})
	_, err := EgressFromConfig(gh, "claude")
	var ce *errdefs.ConfigError
	if !errors.As(err, &ce) || ce.Key != "secrets[2].source" || !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("two github-app secrets: err = %v, want a secrets[2].source conflict", err)
	}
	none := cfg
	none.Sandbox.Network = "none"
	_, err = EgressFromConfig(none, "claude")
	if !errors.As(err, &ce) || ce.Key != "network.mode" || !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("mode none: err = %v, want a network.mode conflict", err)
	}
}
