package github

import (
	"context"
	"crypto/x509"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/github/githubtest"
)

func TestInstallationTokenIsScoped(t *testing.T) {
	key := testRSAKey()
	srv := githubtest.NewServer(t, &key.PublicKey, githubtest.Options{})
	keyPath := writeFile(t, t.TempDir(), "app.pem", pemBytes("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)))
	for _, tc := range []struct {
		name  string
		perms map[string]string
		want  map[string]string
	}{
		{"default", nil, DefaultTokenPermissions()},
		{"configured", map[string]string{"contents": "read", "issues": "write"}, map[string]string{"contents": "read", "issues": "write"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app, err := NewApp(AppConfig{AppID: srv.AppID(), InstallationID: srv.InstallationID(), KeyPath: keyPath,
				APIURL: srv.URL, HTTPClient: srv.Client(), TokenPermissions: tc.perms})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := app.InstallationToken(context.Background(), []string{"demo"}); err != nil {
				t.Fatal(err)
			}
			reqs := srv.TokenRequests()
			last := reqs[len(reqs)-1]
			if !slices.Equal(last.Repositories, []string{"demo"}) || !maps.Equal(last.Permissions, tc.want) {
				t.Errorf("token request = %+v; want repositories [demo] and permissions %v", last, tc.want)
			}
		})
	}
}

func TestInstallationTokenNeedsRepository(t *testing.T) {
	app, srv := newTestApp(t, githubtest.Options{})
	for _, repos := range [][]string{nil, {}, {""}, {"octo-org/demo"}, {"a b"}} {
		_, err := app.InstallationToken(context.Background(), repos)
		var ce *errdefs.ConfigError
		if !errors.As(err, &ce) || ce.Key != "repo" {
			t.Errorf("InstallationToken(%q) = %v; want a repo ConfigError", repos, err)
		}
	}
	if n := len(srv.TokenRequests()); n != 0 {
		t.Errorf("%d token requests reached GitHub", n)
	}
}

func TestTokenPermissionsValidated(t *testing.T) {
	key := testRSAKey()
	keyPath := writeFile(t, t.TempDir(), "app.pem", pemBytes("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)))
	for _, tc := range []struct {
		perms    map[string]string
		fragment string
	}{
		{map[string]string{}, "no permissions"},
		{map[string]string{"contents": "admin"}, `"contents = admin"`},
		{map[string]string{"contents": "write", "telepathy": "read"}, `"telepathy = read"`},
	} {
		_, err := NewApp(AppConfig{AppID: 1, InstallationID: 2, KeyPath: keyPath, TokenPermissions: tc.perms})
		var ce *errdefs.ConfigError
		if !errors.As(err, &ce) || ce.Key != "github.token_permissions" || !strings.Contains(err.Error(), tc.fragment) {
			t.Errorf("NewApp with %v = %v; want a github.token_permissions error with %s", tc.perms, err, tc.fragment)
		}
	}
}

func TestFakeGitHubRefusesBadLevel(t *testing.T) {
	app, srv := newTestApp(t, githubtest.Options{})
	app.perms.Contents = new("admin")
	if _, err := app.InstallationToken(context.Background(), []string{"demo"}); !errors.Is(err, errdefs.ErrGitHub) {
		t.Errorf("InstallationToken with level admin = %v; want GitHub's refusal", err)
	}
	if n := len(srv.TokenRequests()); n != 0 {
		t.Errorf("the fake recorded %d refused requests", n)
	}
}
