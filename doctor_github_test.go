package podbot

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/github"
	"github.com/podbot/podbot/github/githubtest"
)

var (
	testKeysOnce sync.Once
	testKeys     [2]*rsa.PrivateKey
)

// testRSAKeys returns two RSA keys, generated once per test binary.
func testRSAKeys(t *testing.T) [2]*rsa.PrivateKey {
	t.Helper()
	testKeysOnce.Do(func() {
		for i := range testKeys {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			testKeys[i] = k
		}
	})
	return testKeys
}

func writePEM(t *testing.T, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDoctorGitHub(t *testing.T) {
	keys := testRSAKeys(t)
	goodKey := writePEM(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(keys[0]))
	otherKey := writePEM(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(keys[1]))
	pubDER, err := x509.MarshalPKIXPublicKey(&keys[0].PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubKey := writePEM(t, "PUBLIC KEY", pubDER)

	type want struct {
		status CheckStatus
		detail string
	}
	cases := []struct {
		name   string
		cfg    func(g *config.GitHub)
		fail   func(s *githubtest.Server)
		checks map[string]want // absent names must not run
	}{
		{name: "all good", checks: map[string]want{
			checkGitHubKey:          {CheckOK, "RSA 2048-bit"},
			checkGitHubApp:          {CheckOK, "podbot-test-app (id 1)"},
			checkGitHubInstallation: {CheckOK, "installation 2 on octo-org"},
		}},
		{name: "missing key file", cfg: func(g *config.GitHub) { g.PrivateKeyPath = filepath.Join(t.TempDir(), "nope.pem") },
			checks: map[string]want{checkGitHubKey: {CheckFail, "does not exist"}}},
		{name: "public key", cfg: func(g *config.GitHub) { g.PrivateKeyPath = pubKey },
			checks: map[string]want{checkGitHubKey: {CheckFail, "public key"}}},
		{name: "key of another App", cfg: func(g *config.GitHub) { g.PrivateKeyPath = otherKey },
			checks: map[string]want{checkGitHubKey: {CheckOK, "RSA"}, checkGitHubApp: {CheckFail, "rejected the App credentials"}}},
		{name: "no app id", cfg: func(g *config.GitHub) { g.AppID = 0 },
			checks: map[string]want{checkGitHubKey: {CheckOK, "RSA"}, checkGitHubApp: {CheckFail, "github.app_id"}}},
		{name: "App not found", fail: func(s *githubtest.Server) {
			s.Fail(githubtest.RouteApp, githubtest.Failure{Status: http.StatusNotFound, Message: "Not Found"})
		}, checks: map[string]want{checkGitHubKey: {CheckOK, "RSA"}, checkGitHubApp: {CheckFail, "App not found"}}},
		{name: "rate limited", fail: func(s *githubtest.Server) {
			s.Fail(githubtest.RouteApp, githubtest.Failure{Status: http.StatusForbidden, Message: "API rate limit exceeded",
				Header: http.Header{"X-Ratelimit-Remaining": {"0"}}})
		}, checks: map[string]want{checkGitHubKey: {CheckOK, "RSA"}, checkGitHubApp: {CheckFail, "rate limit"}}},
		{name: "GitHub down", fail: func(s *githubtest.Server) {
			s.Fail(githubtest.RouteApp, githubtest.Failure{Status: http.StatusBadGateway, Message: "Server Error"})
		}, checks: map[string]want{checkGitHubKey: {CheckOK, "RSA"}, checkGitHubApp: {CheckFail, "unavailable"}}},
		{name: "unknown installation", cfg: func(g *config.GitHub) { g.InstallationID = 99 },
			checks: map[string]want{checkGitHubKey: {CheckOK, "RSA"}, checkGitHubApp: {CheckOK, "answers"},
				checkGitHubInstallation: {CheckFail, "installation not found"}}},
		{name: "no installation id", cfg: func(g *config.GitHub) { g.InstallationID = 0 },
			checks: map[string]want{checkGitHubKey: {CheckOK, "RSA"}, checkGitHubApp: {CheckOK, "answers"},
				checkGitHubInstallation: {CheckWarn, "github.installation_id"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := githubtest.NewServer(t, &keys[0].PublicKey, githubtest.Options{})
			if tc.fail != nil {
				tc.fail(srv)
			}
			cfg := config.Default()
			cfg.GitHub = config.GitHub{AppID: srv.AppID(), InstallationID: srv.InstallationID(), PrivateKeyPath: goodKey, APIURL: srv.URL}
			if tc.cfg != nil {
				tc.cfg(&cfg.GitHub)
			}
			var built int
			r := Doctor(context.Background(), DoctorOptions{
				Config:      &config.Loaded{Config: cfg},
				EndpointErr: os.ErrNotExist,
				GitHubApp: func(c github.AppConfig) (*github.App, error) {
					built++
					c.HTTPClient = srv.Client()
					return github.NewApp(c)
				},
			})
			got := map[string]Check{}
			for _, c := range r.Checks {
				if strings.HasPrefix(c.Name, "github") {
					got[c.Name] = c
				}
			}
			if len(got) != len(tc.checks) {
				t.Errorf("GitHub checks %+v, want exactly %v", got, tc.checks)
			}
			for name, w := range tc.checks {
				c := got[name]
				if c.Status != w.status || !strings.Contains(c.Detail, w.detail) {
					t.Errorf("check %q = %s %q, want %s containing %q", name, c.Status, c.Detail, w.status, w.detail)
				}
				if c.Status != CheckOK && c.Fix == "" {
					t.Errorf("check %q is %s without a fix", name, c.Status)
				}
			}
			if _, ran := tc.checks[checkGitHubApp]; ran != (built == 1) {
				t.Errorf("App built %d times, want it built only when the key loads", built)
			}
		})
	}
}

func TestDoctorSkipsGitHubWhenUnconfigured(t *testing.T) {
	r := Doctor(context.Background(), DoctorOptions{
		Config:      &config.Loaded{Config: config.Default()},
		EndpointErr: os.ErrNotExist,
		GitHubApp: func(github.AppConfig) (*github.App, error) {
			t.Fatal("the doctor built a GitHub App with none configured")
			return nil, nil
		},
	})
	for _, c := range r.Checks {
		if strings.HasPrefix(c.Name, "github") {
			t.Errorf("unexpected GitHub check %+v", c)
		}
	}
}
