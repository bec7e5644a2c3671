package github

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/github/githubtest"
)

func newTestApp(t *testing.T, opts githubtest.Options) (*App, *githubtest.Server) {
	t.Helper()
	key := testRSAKey()
	srv := githubtest.NewServer(t, &key.PublicKey, opts)
	keyPath := writeFile(t, t.TempDir(), "app.pem", pemBytes("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)))
	app, err := NewApp(AppConfig{
		AppID: srv.AppID(), InstallationID: srv.InstallationID(),
		KeyPath: keyPath, APIURL: srv.URL, HTTPClient: srv.Client(),
	})
	if err != nil {
		t.Fatalf("NewApp: %v", err)
	}
	return app, srv
}

func TestValidateAppAndInstallation(t *testing.T) {
	for _, prefix := range []string{"", "/api/v3"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			app, srv := newTestApp(t, githubtest.Options{AppID: 77, InstallationID: 88, PathPrefix: prefix})
			info, err := app.ValidateApp(context.Background())
			if err != nil {
				t.Fatalf("ValidateApp: %v", err)
			}
			if info.ID != 77 || info.Slug == "" {
				t.Errorf("ValidateApp = %+v, want id 77 and a slug", info)
			}
			inst, err := app.CheckInstallation(context.Background())
			if err != nil {
				t.Fatalf("CheckInstallation: %v", err)
			}
			if inst.ID != 88 || inst.Account != "octo-org" {
				t.Errorf("CheckInstallation = %+v", inst)
			}
			if n, why := srv.RejectedJWTs(); n != 0 {
				t.Errorf("server rejected %d JWTs: %s", n, why)
			}
		})
	}
}

func TestInstallationTokenKeepsGitHubExpiry(t *testing.T) {
	base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	app, srv := newTestApp(t, githubtest.Options{TokenTTL: 90 * time.Second, Now: func() time.Time { return base }})
	tok, err := app.InstallationToken(context.Background(), []string{"demo"})
	if err != nil {
		t.Fatalf("InstallationToken: %v", err)
	}
	if want := base.Add(90 * time.Second); !tok.ExpiresAt.Equal(want) {
		t.Errorf("ExpiresAt = %v, want GitHub's %v", tok.ExpiresAt, want)
	}
	if !srv.Valid(tok.Value) {
		t.Error("the server does not accept the token it issued")
	}
	second, err := app.InstallationToken(context.Background(), []string{"demo"})
	if err != nil {
		t.Fatalf("second InstallationToken: %v", err)
	}
	if second.Value == tok.Value {
		t.Error("two calls returned the same token; each call must mint a new one")
	}
	if srv.Valid(tok.Value) || !srv.Valid(second.Value) {
		t.Error("after a refresh only the newest token should be valid")
	}
	if srv.Issued() != 2 {
		t.Errorf("server issued %d tokens, want 2", srv.Issued())
	}
}

func TestWrongKeyIsRejected(t *testing.T) {
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	srv := githubtest.NewServer(t, &other.PublicKey, githubtest.Options{})
	keyPath := writeFile(t, t.TempDir(), "app.pem", pemBytes("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(testRSAKey())))
	app, err := NewApp(AppConfig{AppID: srv.AppID(), KeyPath: keyPath, APIURL: srv.URL, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = app.ValidateApp(context.Background())
	if !errors.Is(err, errdefs.ErrAuth) || !strings.Contains(err.Error(), "rejected the App credentials") {
		t.Fatalf("ValidateApp with the wrong key = %v, want credentials rejected", err)
	}
	if n, why := srv.RejectedJWTs(); n != 1 || !strings.Contains(why, "signature") {
		t.Errorf("server rejected %d JWTs (%s), want 1 for the signature", n, why)
	}
}

func TestAPIErrorMapping(t *testing.T) {
	tests := []struct {
		name    string
		route   string
		failure githubtest.Failure
		call    func(*App) error
		reason  error
		want    []string
	}{
		{"401", githubtest.RouteApp, githubtest.Failure{Status: 401, Message: "Bad credentials"}, validate,
			errdefs.ErrAuth, []string{"rejected the App credentials", "HTTP 401", "Bad credentials"}},
		{"403 rate limit remaining 0", githubtest.RouteApp, githubtest.Failure{Status: 403, Message: "API rate limit exceeded",
			Header: http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Limit": {"5000"}, "X-Ratelimit-Reset": {"1893456000"}}}, validate,
			errdefs.ErrRateLimited, []string{"rate limit", "resets at"}},
		{"403 retry-after", githubtest.RouteApp, githubtest.Failure{Status: 403, Message: "slow down", Header: http.Header{"Retry-After": {"30"}}}, validate,
			errdefs.ErrRateLimited, []string{"rate limit", "30"}},
		{"403 secondary rate limit", githubtest.RouteApp, githubtest.Failure{Status: 403, Message: "secondary",
			DocumentationURL: "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}, validate,
			errdefs.ErrRateLimited, []string{"rate limit"}},
		{"429", githubtest.RouteApp, githubtest.Failure{Status: 429, Message: "too many"}, validate,
			errdefs.ErrRateLimited, []string{"rate limit"}},
		{"403 permissions", githubtest.RouteApp, githubtest.Failure{Status: 403, Message: "Resource not accessible by integration"}, validate,
			errdefs.ErrPermissionDenied, []string{"lacks permission"}},
		{"404 app", githubtest.RouteApp, githubtest.Failure{Status: 404, Message: "Not Found"}, validate,
			errdefs.ErrNotFound, []string{"App not found", "github.app_id 1"}},
		{"500", githubtest.RouteApp, githubtest.Failure{Status: 500, Message: "boom"}, validate,
			errdefs.ErrUnavailable, []string{"GitHub is unavailable", "HTTP 500"}},
		{"503", githubtest.RouteApp, githubtest.Failure{Status: 503}, validate,
			errdefs.ErrUnavailable, []string{"GitHub is unavailable"}},
		{"404 installation", githubtest.RouteInstallation, githubtest.Failure{Status: 404, Message: "Not Found"}, check,
			errdefs.ErrNotFound, []string{"installation not found", "github.installation_id 2"}},
		{"token 502", githubtest.RouteAccessTokens, githubtest.Failure{Status: 502}, token,
			errdefs.ErrUnavailable, []string{"GitHub is unavailable"}},
		{"token 401", githubtest.RouteAccessTokens, githubtest.Failure{Status: 401}, token,
			errdefs.ErrAuth, []string{"rejected the App credentials"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app, srv := newTestApp(t, githubtest.Options{})
			srv.Fail(tt.route, tt.failure)
			err := tt.call(app)
			if err == nil {
				t.Fatal("call succeeded, want an error")
			}
			var ge *errdefs.GitHubError
			if !errors.As(err, &ge) || !errors.Is(err, errdefs.ErrGitHub) || !errors.Is(err, tt.reason) {
				t.Fatalf("error %v (%T) does not match ErrGitHub and reason %v", err, err, tt.reason)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func validate(a *App) error { _, err := a.ValidateApp(context.Background()); return err }
func check(a *App) error    { _, err := a.CheckInstallation(context.Background()); return err }
func token(a *App) error {
	_, err := a.InstallationToken(context.Background(), []string{"demo"})
	return err
}

func TestUnreachableAPI(t *testing.T) {
	app, srv := newTestApp(t, githubtest.Options{})
	srv.Close()
	_, err := app.ValidateApp(context.Background())
	if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "cannot reach GitHub") {
		t.Fatalf("ValidateApp against a closed server = %v, want unavailable", err)
	}
}

func TestRemoteMessageIsBounded(t *testing.T) {
	app, srv := newTestApp(t, githubtest.Options{})
	srv.Fail(githubtest.RouteApp, githubtest.Failure{Status: 500, Message: strings.Repeat("x", 5000) + "\x1b[31m"})
	err := validate(app)
	if err == nil || len(err.Error()) > 600 || strings.ContainsRune(err.Error(), 0x1b) {
		t.Fatalf("error not bounded or not sanitised: %d bytes", len(err.Error()))
	}
}

func TestNewAppConfigErrors(t *testing.T) {
	keyPath := writeFile(t, t.TempDir(), "app.pem", pemBytes("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(testRSAKey())))
	tests := []struct {
		name string
		cfg  AppConfig
		key  string
	}{
		{"no app id", AppConfig{KeyPath: keyPath}, "github.app_id"},
		{"negative installation", AppConfig{AppID: 1, InstallationID: -1, KeyPath: keyPath}, "github.installation_id"},
		{"ftp url", AppConfig{AppID: 1, KeyPath: keyPath, APIURL: "ftp://example.com/"}, "github.api_url"},
		{"url with credentials", AppConfig{AppID: 1, KeyPath: keyPath, APIURL: "https://user:pw@example.com/"}, "github.api_url"},
		{"url with query", AppConfig{AppID: 1, KeyPath: keyPath, APIURL: "https://example.com/?a=b"}, "github.api_url"},
		{"url without host", AppConfig{AppID: 1, KeyPath: keyPath, APIURL: "https:///api/v3"}, "github.api_url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewApp(tt.cfg)
			var ce *errdefs.ConfigError
			if !errors.As(err, &ce) || ce.Key != tt.key {
				t.Fatalf("NewApp = %v, want a ConfigError for %s", err, tt.key)
			}
		})
	}
	app, err := NewApp(AppConfig{AppID: 1, KeyPath: keyPath})
	if err != nil {
		t.Fatal(err)
	}
	if app.APIURL() != DefaultAPIURL {
		t.Errorf("default API URL = %q", app.APIURL())
	}
	if _, err := app.InstallationToken(context.Background(), []string{"demo"}); !errors.Is(err, errdefs.ErrMissingRequired) {
		t.Errorf("InstallationToken without an installation id = %v, want missing required", err)
	}
	app, err = NewApp(AppConfig{AppID: 1, KeyPath: keyPath, APIURL: "https://ghe.example.com/api/v3"})
	if err != nil || app.APIURL() != "https://ghe.example.com/api/v3/" {
		t.Errorf("enterprise API URL = %v, %v", app, err)
	}
}

func TestCanceledContext(t *testing.T) {
	app, _ := newTestApp(t, githubtest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := app.InstallationToken(ctx, []string{"demo"}); !errors.Is(err, errdefs.ErrGitHub) || !errors.Is(err, context.Canceled) {
		t.Fatalf("InstallationToken with a canceled context = %v", err)
	}
}
