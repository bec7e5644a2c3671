package podbot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/gitcred"
)

func TestGitHubSecretOneOnly(t *testing.T) {
	gh := config.Secret{Name: "gh", Source: config.SecretSourceGitHubApp}
	if i, err := githubSecret([]config.Secret{vaultSecret()}); i != -1 || err != nil {
		t.Fatalf("no github-app: %d %v", i, err)
	}
	if i, err := githubSecret([]config.Secret{vaultSecret(), gh}); i != 1 || err != nil {
		t.Fatalf("one github-app: %d %v", i, err)
	}
	_, err := githubSecret([]config.Secret{gh, vaultSecret(), gh})
	wantSourceErr(t, err, "secrets[2].source", errdefs.ErrConflict)
}

// The github-app secret must be git's basic-auth password as
// x-access-token, and its hosts must cover the clone origin: otherwise git's
// placeholder would go out unreplaced.
func TestCheckGitHubSecret(t *testing.T) {
	mustOrigin := func(s string) gitcred.Origin {
		o, err := gitcred.ParseOrigin(s)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	ok := func(hosts []string, origin string) error {
		return checkGitHubSecret(3, config.Secret{Name: "gh", Source: "github-app", Hosts: hosts, BasicAuthUser: GitHubTokenUser}, mustOrigin(origin))
	}
	for _, tc := range []struct {
		hosts  []string
		origin string
	}{
		{[]string{"github.com"}, "https://github.com/"},
		{[]string{"api.github.com", "*.example.com"}, "https://git.example.com/"},
		{[]string{"git.local:8443"}, "https://git.local:8443/"},
		{[]string{"10.0.0.5:80"}, "http://10.0.0.5/"},
	} {
		if err := ok(tc.hosts, tc.origin); err != nil {
			t.Errorf("%v for %s: %v", tc.hosts, tc.origin, err)
		}
	}
	for _, tc := range []struct {
		hosts  []string
		origin string
	}{
		{[]string{"api.github.com"}, "https://github.com/"},
		{[]string{"git.local:443"}, "https://git.local:8443/"},
		{[]string{"*.github.com"}, "https://github.com/"},
	} {
		err := ok(tc.hosts, tc.origin)
		var ce *errdefs.ConfigError
		if !errors.As(err, &ce) || ce.Key != "secrets[3].hosts" || !strings.Contains(err.Error(), mustOrigin(tc.origin).String()) {
			t.Errorf("%v for %s: err = %v, want an error naming secrets[3].hosts and the origin", tc.hosts, tc.origin, err)
		}
	}
	err := checkGitHubSecret(0, config.Secret{Name: "gh", Source: "github-app", Hosts: []string{"github.com"}, Header: "Authorization: Bearer {}"},
		mustOrigin("https://github.com/"))
	var ce *errdefs.ConfigError
	if !errors.As(err, &ce) || ce.Key != "secrets[0].basic_auth_user" {
		t.Errorf("header instead of basic auth: err = %v", err)
	}
}

// The token's vault end keeps the first value in memory until the
// proxy's secrets file exists, then rewrites only its own secret there,
// atomically, leaving the others and every placeholder as they were.
func TestVaultTokenRewritesTheSecretsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.json")
	api := egress.Secret{Name: "api", Hosts: []egress.Rule{mustRule(t, "api.example.com")}, Header: "x-api-key: {}",
		Placeholder: "podbot-secret-api-AAAAAAAAAAAAAAAAAAAAAAAA", Value: "api-real"}
	gh := egress.Secret{Name: "github", Hosts: []egress.Rule{mustRule(t, "github.com")}, BasicAuthUser: GitHubTokenUser,
		Placeholder: "podbot-secret-github-BBBBBBBBBBBBBBBBBBBBBBBB"}
	vt := &vaultToken{name: "github"}
	if err := vt.SetToken(context.Background(), "ghs_first"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("SetToken wrote a file before attach")
	}
	gh.Value = vt.current()
	if err := egress.WriteSecretsFile(path, []egress.Secret{api, gh}); err != nil {
		t.Fatal(err)
	}
	vt.attach(path)
	if err := vt.SetToken(context.Background(), "ghs_second"); err != nil {
		t.Fatal(err)
	}
	ss, err := egress.ReadSecretsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 2 || ss[0].Value != "api-real" || ss[0].Placeholder != api.Placeholder ||
		ss[1].Value != "ghs_second" || ss[1].Placeholder != gh.Placeholder {
		t.Fatalf("after refresh: %v %v", ss, []string{ss[0].Value, ss[1].Value})
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
	if ph, err := secretPlaceholder(path, "github"); err != nil || ph != gh.Placeholder {
		t.Fatalf("placeholder %q %v", ph, err)
	}
	// A file without the secret is an error, and the value stays.
	other := filepath.Join(t.TempDir(), "secrets.json")
	if err := egress.WriteSecretsFile(other, []egress.Secret{api}); err != nil {
		t.Fatal(err)
	}
	vt.attach(other)
	if err := vt.SetToken(context.Background(), "ghs_third"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("missing secret: %v", err)
	}
	if vt.current() != "ghs_second" {
		t.Fatalf("current %q after a failed write", vt.current())
	}
}

func mustRule(t *testing.T, s string) egress.Rule {
	t.Helper()
	r, err := egress.ParseRule(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A container labelled with a vault secret gets a target that refreshes
// the proxy's secrets file and writes the placeholder that file holds; one
// whose secrets file is missing is refused rather than given a real token
// file.
func TestTokenTargetVault(t *testing.T) {
	runtime := t.TempDir()
	labels := map[string]string{"podbot.github_repo": "o/r", "podbot.github_origin": "https://github.com",
		LabelGitHubVault: "github"}
	if _, err := tokenTarget("sb1", labels, runtime); !errors.Is(err, errdefs.ErrRefused) {
		t.Fatalf("no secrets file: err = %v, want refused", err)
	}
	dirs, err := egressnet.DirsFor(runtime, "sb1")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dirs.Vault, 0o700); err != nil {
		t.Fatal(err)
	}
	gh := egress.Secret{Name: "github", Hosts: []egress.Rule{mustRule(t, "github.com")}, BasicAuthUser: GitHubTokenUser,
		Placeholder: "podbot-secret-github-BBBBBBBBBBBBBBBBBBBBBBBB", Value: "ghs_old"}
	path := dirs.VaultPath(egressnet.SecretsFile)
	if err := egress.WriteSecretsFile(path, []egress.Secret{gh}); err != nil {
		t.Fatal(err)
	}
	tg, err := tokenTarget("sb1", labels, runtime)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Placeholder != gh.Placeholder || tg.Vault == nil {
		t.Fatalf("target %+v", tg)
	}
	if err := tg.Vault.SetToken(context.Background(), "ghs_new"); err != nil {
		t.Fatal(err)
	}
	ss, err := egress.ReadSecretsFile(path)
	if err != nil || ss[0].Value != "ghs_new" {
		t.Fatalf("after SetToken: %v", err)
	}
	// Without the label the target has no vault.
	delete(labels, LabelGitHubVault)
	if tg, err := tokenTarget("sb1", labels, runtime); err != nil || tg.Vault != nil || tg.Placeholder != "" {
		t.Fatalf("plain target %+v %v", tg, err)
	}
}
