package podbot

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

const codexTestKey = "sk-proj-CODEXREAL-0123456789abcdef"

func codexHome(t *testing.T, auth, cfg string) string {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(home, creds.CodexDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		if err := os.WriteFile(filepath.Join(dir, creds.CodexAuthFile), []byte(auth), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if cfg != "" {
		if err := os.WriteFile(filepath.Join(dir, creds.CodexConfigFile), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

func codexOpts(home string) LaunchOptions {
	var o LaunchOptions
	o.HostHome = home
	o.Config.Creds = config.Creds{CopyCodex: true, VaultCodexKey: true}
	return o
}

const codexAuth = `{"OPENAI_API_KEY":"` + codexTestKey + `","tokens":{"refresh_token":"rt"},"last_refresh":"2026-01-01T00:00:00Z"}`

// TestCodexVaultKeepsKeyOutOfUpload plays the sandbox: everything it
// receives from ~/.codex (the archive) must not hold the real key, while
// the vault holds it for api.openai.com and openai_base_url's host only.
func TestCodexVaultKeepsKeyOutOfUpload(t *testing.T) {
	home := codexHome(t, codexAuth, `openai_base_url = "https://gw.example.com:8443/v1"`+"\n")
	o := codexOpts(home)
	cv, err := prepareCodexVault(o, egress.ModeAllowlist)
	if err != nil || cv == nil {
		t.Fatalf("prepareCodexVault: %v, %v", cv, err)
	}
	if len(cv.warnings) != 0 {
		t.Fatalf("warnings: %v", cv.warnings)
	}
	s := cv.secret.secret
	if s.Name != CodexSecretName || s.Header != "Authorization: Bearer {}" || !slices.Equal(s.Hosts, []string{"api.openai.com", "gw.example.com:8443"}) || s.Env != "" {
		t.Fatalf("implicit secret: %+v", s)
	}
	v, err := newVault("sb", nil, nil, nil, cv.secret)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.secrets) != 1 || v.secrets[0].Value != codexTestKey || !strings.HasPrefix(v.secrets[0].Placeholder, egress.PlaceholderPrefix+CodexSecretName+"-") {
		t.Fatalf("vault: %v", v.secrets)
	}
	var hosts []string
	for _, h := range v.secrets[0].Hosts {
		hosts = append(hosts, h.String())
	}
	if !slices.Equal(hosts, []string{"api.openai.com", "gw.example.com:8443"}) {
		t.Fatalf("hosts %v", hosts)
	}
	ph := v.placeholder(CodexSecretName)
	auth, err := cv.auth.WithAPIKey(ph)
	if err != nil {
		t.Fatal(err)
	}
	arch, err := creds.Build(context.Background(), creds.BuildOptions{HostHome: home, CopyCodex: true,
		Overrides: map[string][]byte{creds.CodexAuthName: auth}, Forbidden: []string{cv.auth.APIKey}})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(arch.Tar, []byte(codexTestKey)) {
		t.Fatal("the real key is in the uploaded archive")
	}
	tr := tar.NewReader(bytes.NewReader(arch.Tar))
	found := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != creds.CodexAuthName {
			continue
		}
		data, _ := io.ReadAll(tr)
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		if m["OPENAI_API_KEY"] != ph || m["last_refresh"] != "2026-01-01T00:00:00Z" || m["tokens"] == nil {
			t.Fatalf("uploaded auth.json: %v", m)
		}
		found = true
	}
	if !found {
		t.Fatal("auth.json is not in the archive")
	}
	if b, _ := os.ReadFile(filepath.Join(home, creds.CodexDir, creds.CodexAuthFile)); string(b) != codexAuth {
		t.Fatal("the host's auth.json changed")
	}
}

func TestCodexVaultNotApplied(t *testing.T) {
	home := codexHome(t, codexAuth, "")
	for name, c := range map[string]struct {
		mode egress.Mode
		edit func(*LaunchOptions)
	}{
		"open":      {egress.ModeOpen, func(*LaunchOptions) {}},
		"none":      {egress.ModeNone, func(*LaunchOptions) {}},
		"no copy":   {egress.ModeAllowlist, func(o *LaunchOptions) { o.Config.Creds.CopyCodex = false }},
		"opted out": {egress.ModeAllowlist, func(o *LaunchOptions) { o.Config.Creds.VaultCodexKey = false }},
		"excluded":  {egress.ModeAllowlist, func(o *LaunchOptions) { o.Config.Creds.Exclude = []string{".codex/auth.json"} }},
		"no home":   {egress.ModeAllowlist, func(o *LaunchOptions) { o.HostHome = "" }},
		"no auth":   {egress.ModeAllowlist, func(o *LaunchOptions) { o.HostHome = codexHome(t, "", "") }},
		"tokens only": {egress.ModeAllowlist, func(o *LaunchOptions) {
			o.HostHome = codexHome(t, `{"OPENAI_API_KEY":null,"tokens":{"access_token":"a"}}`, "")
		}},
	} {
		o := codexOpts(home)
		c.edit(&o)
		if cv, err := prepareCodexVault(o, c.mode); cv != nil || err != nil {
			t.Errorf("%s: %v, %v", name, cv, err)
		}
	}
}

func TestCodexVaultMalformedAuthRefused(t *testing.T) {
	home := codexHome(t, `{"OPENAI_API_KEY":"`+codexTestKey+`",`, "")
	_, err := prepareCodexVault(codexOpts(home), egress.ModeAllowlist)
	var ce *errdefs.ConfigError
	if !errors.As(err, &ce) || ce.Key != "creds.vault_codex_key" {
		t.Fatalf("want a ConfigError on creds.vault_codex_key, got %v", err)
	}
	if strings.Contains(err.Error(), codexTestKey) {
		t.Fatal("the error holds the key")
	}
}

func TestCodexVaultBadConfigWarns(t *testing.T) {
	home := codexHome(t, codexAuth, "openai_base_url = [\n")
	cv, err := prepareCodexVault(codexOpts(home), egress.ModeAllowlist)
	if err != nil || cv == nil || len(cv.warnings) != 1 || !slices.Equal(cv.secret.secret.Hosts, []string{"api.openai.com"}) {
		t.Fatalf("got %v, %v", cv, err)
	}
}

func TestCodexVaultNameReserved(t *testing.T) {
	o := codexOpts(codexHome(t, codexAuth, ""))
	o.Config.Secrets = []config.Secret{{Name: "x"}, {Name: CodexSecretName}}
	_, err := prepareCodexVault(o, egress.ModeAllowlist)
	var ce *errdefs.ConfigError
	if !errors.As(err, &ce) || ce.Key != "secrets[1].name" || !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("got %v", err)
	}
}

// TestCodexVaultWithReadOnlyRootfs: the key moves into the vault on a
// read-only root filesystem too, and the plan takes the vault.
func TestCodexVaultWithReadOnlyRootfs(t *testing.T) {
	cv, err := prepareCodexVault(codexOpts(codexHome(t, codexAuth, "")), egress.ModeAllowlist)
	if err != nil || cv == nil {
		t.Fatalf("prepareCodexVault: %v, %v", cv, err)
	}
	v, err := newVault("sb", nil, nil, nil, cv.secret)
	if err != nil {
		t.Fatal(err)
	}
	plan := launchplan.Plan{}
	plan.Security.ReadOnlyRootfs = true
	if _, err := applyVault(&plan, v); err != nil {
		t.Fatalf("applyVault on a read-only root: %v", err)
	}
}
