package podbot

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

const vaultTestValue = "sk-vault-REAL-0123456789abcdef"

func vaultSecret() config.Secret {
	return config.Secret{Name: "api", Source: "env:PODBOT_TEST_VAULT_SRC", Hosts: []string{"api.example.com", "*.example.org:8443"},
		Header: "x-api-key: {}", Env: "VAULT_KEY"}
}

func wantSourceErr(t *testing.T, err error, key string, reason error) {
	t.Helper()
	var ce *errdefs.ConfigError
	if !errors.As(err, &ce) || ce.Key != key || !errors.Is(err, reason) {
		t.Fatalf("err = %v, want %v on %s", err, reason, key)
	}
	if strings.Contains(err.Error(), vaultTestValue) {
		t.Fatalf("the error holds the value: %v", err)
	}
}

func TestResolveSecretValueEnv(t *testing.T) {
	s := vaultSecret()
	v, err := resolveSecretValue(0, s, []string{"PODBOT_TEST_VAULT_SRC=old", "PODBOT_TEST_VAULT_SRC=" + vaultTestValue})
	if err != nil || v != vaultTestValue {
		t.Fatalf("got %q, %v", v, err)
	}
	_, err = resolveSecretValue(3, s, []string{"OTHER=" + vaultTestValue})
	wantSourceErr(t, err, "secrets[3].source", errdefs.ErrMissingRequired)
	_, err = resolveSecretValue(0, s, []string{"PODBOT_TEST_VAULT_SRC="})
	wantSourceErr(t, err, "secrets[0].source", errdefs.ErrMissingRequired)
}

func TestResolveSecretValueFile(t *testing.T) {
	dir := t.TempDir()
	s := vaultSecret()
	ok := filepath.Join(dir, "key")
	if err := os.WriteFile(ok, []byte(vaultTestValue+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Source = "file:" + ok
	if v, err := resolveSecretValue(0, s, nil); err != nil || v != vaultTestValue {
		t.Fatalf("got %q, %v", v, err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("a", egress.MaxSecretValueBytes+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Source = "file:" + big
	_, err := resolveSecretValue(1, s, nil)
	wantSourceErr(t, err, "secrets[1].source", errdefs.ErrInvalidValue)
	// Exactly the bound, with its newline, is fine.
	edge := filepath.Join(dir, "edge")
	if err := os.WriteFile(edge, []byte(strings.Repeat("a", egress.MaxSecretValueBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Source = "file:" + edge
	if v, err := resolveSecretValue(0, s, nil); err != nil || len(v) != egress.MaxSecretValueBytes {
		t.Fatalf("edge: len %d, %v", len(v), err)
	}
	s.Source = "file:" + dir
	_, err = resolveSecretValue(2, s, nil)
	wantSourceErr(t, err, "secrets[2].source", errdefs.ErrInvalidValue)
	s.Source = "file:" + filepath.Join(dir, "missing")
	_, err = resolveSecretValue(0, s, nil)
	wantSourceErr(t, err, "secrets[0].source", errdefs.ErrMissingRequired)
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Source = "file:" + empty
	_, err = resolveSecretValue(0, s, nil)
	wantSourceErr(t, err, "secrets[0].source", errdefs.ErrInvalidValue)
}

func TestNewVaultGitHubApp(t *testing.T) {
	s := config.Secret{Name: "github", Source: "github-app", Hosts: []string{"github.com"}, BasicAuthUser: GitHubTokenUser}
	// Without a minted token the github-app secret has no value.
	_, err := newVault("sb", []config.Secret{vaultSecret(), s}, []string{"PODBOT_TEST_VAULT_SRC=" + vaultTestValue}, nil)
	wantSourceErr(t, err, "secrets[1].source", errdefs.ErrMissingRequired)
	const ph = "podbot-secret-github-ABCDEFGHIJKLMNOPQRSTUVWX"
	v, err := newVault("sb", []config.Secret{vaultSecret(), s}, []string{"PODBOT_TEST_VAULT_SRC=" + vaultTestValue},
		&ghToken{placeholder: ph, value: "ghs_real"})
	if err != nil {
		t.Fatal(err)
	}
	if g := v.secrets[1]; g.Placeholder != ph || g.Value != "ghs_real" || g.BasicAuthUser != GitHubTokenUser {
		t.Fatalf("github secret %#v placeholder %q", g, g.Placeholder)
	}
	// A value the proxy could not put in a header is refused by key.
	_, err = newVault("sb", []config.Secret{vaultSecret()}, []string{"PODBOT_TEST_VAULT_SRC=a\x01b"}, nil)
	wantSourceErr(t, err, "secrets[0].source", errdefs.ErrInvalidValue)
}

// The plan gets placeholders and trust variables; the real value lands in
// none of the plan, its rendered create request, its labels, the policy
// file or the vault index, and the agent's allowlisted copies of it are
// dropped. Only the proxy's secrets file holds it.
func TestApplyVaultKeepsValueOutOfThePlan(t *testing.T) {
	_, conn := newTokenEngine(t)
	cfg := config.Default()
	cfg.Image = "img"
	cfg.Network.Mode = "allowlist"
	cfg.Agent.Kind = "claude"
	cfg.Agent.EnvAllowlist = []string{"VAULT_KEY", "PODBOT_TEST_VAULT_SRC", "OTHER"}
	cfg.Secrets = []config.Secret{vaultSecret()}
	environ := []string{"PODBOT_TEST_VAULT_SRC=" + vaultTestValue, "VAULT_KEY=" + vaultTestValue, "OTHER=fine"}
	req, _, err := launchRequest(conn, LaunchOptions{Config: cfg, Intent: launchplan.IntentInteractive, Environ: environ})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := launchplan.Normalize(req)
	if err != nil {
		t.Fatal(err)
	}
	applyEgressMode(&plan)
	v, err := newVault(plan.Name, cfg.Secrets, environ, nil)
	if err != nil {
		t.Fatal(err)
	}
	dropped, err := applyVault(&plan, v)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(dropped)
	if !slices.Equal(dropped, []string{"PODBOT_TEST_VAULT_SRC", "VAULT_KEY"}) {
		t.Errorf("dropped %v", dropped)
	}
	if !slices.Equal(plan.AgentEnv, []string{"OTHER=fine"}) {
		t.Errorf("AgentEnv %v", plan.AgentEnv)
	}
	ph := v.secrets[0].Placeholder
	if !strings.HasPrefix(ph, "podbot-secret-api-") || !slices.Contains(plan.Env, "VAULT_KEY="+ph) {
		t.Errorf("Env %v lacks the placeholder %s", plan.Env, ph)
	}
	for _, e := range VaultTrustEnv() {
		if !slices.Contains(plan.Env, e) {
			t.Errorf("Env lacks %s", e)
		}
	}
	c, hc, nc := plan.Render()
	sandboxHostConfig(plan, hc)
	planJSON, _ := json.Marshal(plan)
	body, _ := json.Marshal([]any{c, hc, nc})
	for what, s := range map[string]string{"plan": string(planJSON), "create request": string(body)} {
		if strings.Contains(s, vaultTestValue) {
			t.Errorf("the %s holds the real value", what)
		}
	}
	idx := plan.Labels[egressnet.LabelSecrets]
	var entries []VaultIndexEntry
	if err := json.Unmarshal([]byte(idx), &entries); err != nil || len(entries) != 1 || entries[0].Name != "api" ||
		!slices.Equal(entries[0].Hosts, []string{"api.example.com", "*.example.org:8443"}) || entries[0].Env != "VAULT_KEY" {
		t.Errorf("index label %q: %v", idx, err)
	}
	if strings.Contains(idx, ph) || strings.Contains(idx, vaultTestValue) {
		t.Errorf("the index label holds a placeholder or value: %s", idx)
	}

	dirs, err := egressnet.DirsFor(t.TempDir(), plan.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := dirs.Make(); err != nil {
		t.Fatal(err)
	}
	pol := plan.Egress.Policy
	if err := egressnet.WritePolicy(dirs.PolicyPath(), &pol); err != nil {
		t.Fatal(err)
	}
	if err := writeVault(dirs, v); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dirs.PolicyPath(), dirs.VaultPath(egressnet.CACertFile), dirs.VaultPath(egressnet.CAKeyFile)} {
		b, err := os.ReadFile(p)
		if err != nil || strings.Contains(string(b), vaultTestValue) {
			t.Errorf("%s: holds the value or unreadable (%v)", p, err)
		}
	}
	for _, name := range []string{egressnet.SecretsFile, egressnet.CAKeyFile} {
		st, err := os.Stat(dirs.VaultPath(name))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v", name, st.Mode(), err)
		}
		if os.Geteuid() == 0 {
			if uid := fileUID(st); uid != egressnet.ProxyUser {
				t.Errorf("%s: owner %d, want %d", name, uid, egressnet.ProxyUser)
			}
		}
	}
	ss, err := egress.ReadSecretsFile(dirs.VaultPath(egressnet.SecretsFile))
	if err != nil || len(ss) != 1 || ss[0].Value != vaultTestValue || ss[0].Placeholder != ph {
		t.Fatalf("secrets file: %v", err)
	}
	// The sandbox mounts nothing of the egress directory.
	for _, m := range hc.Mounts {
		if strings.HasPrefix(m.Source, dirs.Root) {
			t.Errorf("the sandbox mounts %s", m.Source)
		}
	}
	// The proxy mounts the vault read-only and is told the three files.
	spec := egressnet.ProxySpec{Sandbox: plan.Name, Image: "img", SidecarHost: "/bin/sidecar", SidecarTarget: SidecarTarget, Dirs: dirs, Vault: true}
	pc, phc, _ := spec.Render()
	if !slices.Contains([]string(pc.Cmd), "--secrets") || !slices.Contains([]string(pc.Cmd), "--ca-key") {
		t.Errorf("proxy command %v", pc.Cmd)
	}
	found := false
	for _, m := range phc.Mounts {
		if m.Source == dirs.Vault && m.Target == egressnet.VaultDirTarget && m.ReadOnly {
			found = true
		}
	}
	if !found {
		t.Errorf("the proxy does not mount the vault read-only: %+v", phc.Mounts)
	}
}

// TestApplyVaultWithReadOnlyRootfs: a read-only root filesystem takes the
// vault; the trust files come from a host directory mounted read-only at
// VaultTrustDir, which holds certificates only.
func TestApplyVaultWithReadOnlyRootfs(t *testing.T) {
	v, err := newVault("sb", []config.Secret{vaultSecret()}, []string{"PODBOT_TEST_VAULT_SRC=" + vaultTestValue}, nil)
	if err != nil {
		t.Fatal(err)
	}
	plan := launchplan.Plan{}
	plan.Security.ReadOnlyRootfs = true
	if _, err := applyVault(&plan, v); err != nil {
		t.Fatalf("applyVault on a read-only root: %v", err)
	}
	for _, e := range VaultTrustEnv() {
		if !slices.Contains(plan.Env, e) {
			t.Errorf("Env lacks %s", e)
		}
	}
	dirs, err := egressnet.DirsFor(t.TempDir(), "sb")
	if err != nil {
		t.Fatal(err)
	}
	if err := dirs.Make(); err != nil {
		t.Fatal(err)
	}
	if err := writeVault(dirs, v); err != nil {
		t.Fatal(err)
	}
	if err := plan.Apply(launchplan.WithTrustMount(dirs.Trust, VaultTrustDir)); err != nil {
		t.Fatal(err)
	}
	_, hc, _ := plan.Render()
	if !hc.ReadonlyRootfs {
		t.Fatal("the root filesystem is no longer read-only")
	}
	var trust int
	for _, m := range hc.Mounts {
		if strings.HasPrefix(m.Source, dirs.Root) {
			if m.Source != dirs.Trust || m.Target != VaultTrustDir || !m.ReadOnly {
				t.Errorf("the sandbox mounts %+v from the egress directory", m)
			}
			trust++
		}
	}
	if trust != 1 {
		t.Fatalf("trust mounts: %d in %+v", trust, hc.Mounts)
	}
	for _, f := range []struct{ name, data string }{{egressnet.TrustCAFile, string(v.ca.CertPEM())},
		{egressnet.TrustBundleFile, string(caBundle([]byte("SYS"), v.ca.CertPEM()))}} {
		if err := dirs.WriteTrust(f.name, []byte(f.data)); err != nil {
			t.Fatal(err)
		}
	}
	key, _ := v.ca.KeyPEM()
	ents, err := os.ReadDir(dirs.Trust)
	if err != nil || len(ents) != 2 {
		t.Fatalf("trust dir: %v %v", ents, err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dirs.Trust, e.Name()))
		if err != nil || bytes.Contains(b, key) || bytes.Contains(b, []byte("PRIVATE KEY")) || bytes.Contains(b, []byte(vaultTestValue)) {
			t.Errorf("%s holds a key or a value (%v)", e.Name(), err)
		}
	}
}

func TestCABundle(t *testing.T) {
	if got := string(caBundle([]byte("SYS"), []byte("CA\n"))); got != "SYS\nCA\n" {
		t.Errorf("got %q", got)
	}
	if got := string(caBundle(nil, []byte("CA\n"))); got != "CA\n" {
		t.Errorf("got %q", got)
	}
}

func TestCreateRefusesGitHubAppSecret(t *testing.T) {
	_, conn := newTokenEngine(t)
	cfg := config.Default()
	cfg.Image = "img"
	cfg.Network.Mode = "allowlist"
	cfg.Secrets = []config.Secret{vaultSecret(), {Name: "gh", Source: config.SecretSourceGitHubApp, Hosts: []string{"github.com"}, BasicAuthUser: "x-access-token"}}
	cfg.GitHub.AppID, cfg.GitHub.InstallationID, cfg.GitHub.PrivateKeyPath = 1, 2, "/nonexistent/key.pem"
	_, err := CreateRequest(conn.Endpoint(), CreateOptions{Config: cfg})
	var ce *errdefs.ConfigError
	if !errors.As(err, &ce) || ce.Key != "secrets[1].source" || !errors.Is(err, errdefs.ErrUnsupported) {
		t.Fatalf("err = %v", err)
	}
}

// createPlan is the normalized plan Create makes for cfg.
func createPlan(t *testing.T, cfg config.Config) launchplan.Plan {
	t.Helper()
	_, conn := newTokenEngine(t)
	req, err := CreateRequest(conn.Endpoint(), CreateOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := launchplan.Normalize(req)
	if err != nil {
		t.Fatal(err)
	}
	applyEgressMode(&plan)
	return plan
}

func TestCreateAppliesEnvAndFileSecrets(t *testing.T) {
	const fileValue = "file-secret-VALUE-0123456789"
	p := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(p, []byte(fileValue+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Image = "img"
	cfg.Network.Mode = "allowlist"
	cfg.Secrets = []config.Secret{vaultSecret(),
		{Name: "filetok", Source: "file:" + p, Hosts: []string{"files.example.com"}, Header: "Authorization: Bearer {}", Env: "FILE_TOKEN"}}
	plan := createPlan(t, cfg)
	red := creds.NewRedactor()
	v, err := createVault(&plan, CreateOptions{Config: cfg, Environ: []string{"PODBOT_TEST_VAULT_SRC=" + vaultTestValue}, Redactor: red})
	if err != nil {
		t.Fatal(err)
	}
	if got := v.values(); !slices.Contains(got, vaultTestValue) || !slices.Contains(got, fileValue) {
		t.Fatalf("the vault holds %d values, not the env: and file: ones", len(got))
	}
	if !slices.Contains(plan.Env, "VAULT_KEY="+v.placeholder("api")) || !slices.Contains(plan.Env, "FILE_TOKEN="+v.placeholder("filetok")) {
		t.Errorf("the sandbox's variables do not hold the placeholders: %v", plan.Env)
	}
	for _, kv := range VaultTrustEnv() {
		if !slices.Contains(plan.Env, kv) {
			t.Errorf("missing trust variable %s", kv)
		}
	}
	all, _ := json.Marshal(plan)
	for _, val := range []string{vaultTestValue, fileValue} {
		if strings.Contains(string(all), val) {
			t.Fatalf("the plan holds a real value")
		}
		if red.Redact("x "+val+" y") == "x "+val+" y" {
			t.Errorf("the redactor did not learn a value")
		}
	}
	if plan.Labels[egressnet.LabelSecrets] == "" {
		t.Error("no vault index label")
	}
}

func TestCreateVaultErrors(t *testing.T) {
	cfg := config.Default()
	cfg.Image = "img"
	cfg.Network.Mode = "allowlist"
	cfg.Secrets = []config.Secret{vaultSecret()}
	plan := createPlan(t, cfg)
	_, err := createVault(&plan, CreateOptions{Config: cfg})
	wantSourceErr(t, err, "secrets[0].source", errdefs.ErrMissingRequired)

	plan.Egress.Mode = egress.ModeOpen
	_, err = createVault(&plan, CreateOptions{Config: cfg, Environ: []string{"PODBOT_TEST_VAULT_SRC=" + vaultTestValue}})
	var ce *errdefs.ConfigError
	if !errors.As(err, &ce) || ce.Key != "network.mode" || !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("err = %v", err)
	}
}

func TestVaultIndexLabel(t *testing.T) {
	got := vaultIndex(map[string]string{egressnet.LabelSecrets: `[{"name":"a","hosts":["h.test"]}]`})
	if len(got) != 1 || got[0].Name != "a" || got[0].Hosts[0] != "h.test" {
		t.Errorf("got %+v", got)
	}
	if vaultIndex(map[string]string{egressnet.LabelSecrets: "{bad"}) != nil || vaultIndex(nil) != nil {
		t.Error("a bad or missing label gives entries")
	}
}
