package github

import (
	"context"
	"crypto/rsa"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v60/github"

	"github.com/podbot/podbot/errdefs"
)

// DefaultAPIURL is the REST API root of github.com.
const DefaultAPIURL = "https://api.github.com/"

// AppConfig names a GitHub App installation and how to reach the API.
type AppConfig struct {
	// AppID is the App's numeric id (github.app_id).
	AppID int64
	// InstallationID is the numeric id of the App's installation
	// (github.installation_id). It is needed for tokens, not for ValidateApp.
	InstallationID int64
	// KeyPath is the App's PEM private key (github.private_key_path).
	KeyPath string
	// APIURL is the REST API root (github.api_url). Empty means github.com.
	// For GitHub Enterprise Server use "https://HOST/api/v3/".
	APIURL string
	// TokenPermissions are the permissions installation tokens are asked
	// for (github.token_permissions): GitHub permission name to "read" or
	// "write". Nil means DefaultTokenPermissions.
	TokenPermissions map[string]string
	// HTTPClient is used for every request; nil means a client with
	// http.DefaultTransport. Its Transport is wrapped, never modified.
	HTTPClient *http.Client
}

// App is a GitHub App client ready to call the API. It is safe for
// concurrent use.
type App struct {
	cfg    AppConfig
	client *gh.Client
	perms  *gh.InstallationPermissions
}

// NewApp checks cfg, loads the private key and builds the API client. It
// makes no network call; use ValidateApp to check the App against GitHub.
func NewApp(cfg AppConfig) (*App, error) {
	if cfg.AppID <= 0 {
		return nil, &errdefs.ConfigError{Key: "github.app_id", Reason: errdefs.ErrMissingRequired,
			Msg: "a GitHub App id (a positive number, shown on the App's settings page) is required"}
	}
	if cfg.InstallationID < 0 {
		return nil, &errdefs.ConfigError{Key: "github.installation_id", Reason: errdefs.ErrInvalidValue,
			Msg: "the installation id must be a positive number"}
	}
	base, err := parseAPIURL(cfg.APIURL)
	if err != nil {
		return nil, err
	}
	perms, err := installationPermissions(cfg.TokenPermissions)
	if err != nil {
		return nil, err
	}
	key, _, err := LoadPrivateKey(cfg.KeyPath)
	if err != nil {
		return nil, err
	}
	a := newApp(cfg, base, key)
	a.perms = perms
	return a, nil
}

func newApp(cfg AppConfig, base *url.URL, key *rsa.PrivateKey) *App {
	httpClient := &http.Client{}
	if cfg.HTTPClient != nil {
		*httpClient = *cfg.HTTPClient
	}
	inner := httpClient.Transport
	if inner == nil {
		inner = http.DefaultTransport
	}
	httpClient.Transport = ghinstallation.NewAppsTransportFromPrivateKey(inner, cfg.AppID, key)
	client := gh.NewClient(httpClient)
	client.BaseURL = base
	client.UploadURL = base
	client.UserAgent = "podbot"
	cfg.APIURL = base.String()
	return &App{cfg: cfg, client: client}
}

// parseAPIURL validates github.api_url and gives it the trailing slash the
// client needs.
func parseAPIURL(raw string) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		raw = DefaultAPIURL
	}
	bad := func(msg string) error {
		return &errdefs.ConfigError{Key: "github.api_url", Reason: errdefs.ErrInvalidValue, Msg: msg}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, bad("not a valid URL; use https://api.github.com/ or https://HOST/api/v3/ for GitHub Enterprise Server")
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, bad("the API URL must start with https:// (for example https://HOST/api/v3/)")
	case u.Host == "":
		return nil, bad("the API URL has no host")
	case u.User != nil:
		return nil, bad("the API URL must not carry credentials")
	case u.RawQuery != "" || u.Fragment != "":
		return nil, bad("the API URL must not have a query or fragment")
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	u.RawPath = ""
	return u, nil
}

// APIURL reports the REST API root in use.
func (a *App) APIURL() string { return a.cfg.APIURL }

// AppInfo is what GitHub reports about the App.
type AppInfo struct {
	// ID is the App id GitHub answered with.
	ID int64
	// Slug and Name identify the App.
	Slug, Name string
}

// ValidateApp asks GitHub for the App (GET /app), authenticating with a JWT
// signed by the App key. Failures map to errdefs reasons: ErrAuth (401),
// ErrRateLimited or ErrPermissionDenied (403), ErrNotFound (404, naming
// github.app_id) and ErrUnavailable (5xx or no answer).
func (a *App) ValidateApp(ctx context.Context) (AppInfo, error) {
	app, resp, err := a.client.Apps.Get(ctx, "")
	if err != nil {
		return AppInfo{}, a.apiError(ctx, "validate app", resp, err)
	}
	return AppInfo{ID: app.GetID(), Slug: app.GetSlug(), Name: app.GetName()}, nil
}

// Installation is what GitHub reports about the App's installation.
type Installation struct {
	// ID is the installation id.
	ID int64
	// Account is the user or organisation the App is installed on.
	Account string
	// RepositorySelection is "all" or "selected".
	RepositorySelection string
}

// CheckInstallation asks GitHub for the configured installation
// (GET /app/installations/{id}); podbot doctor uses it to prove the
// installation is reachable.
func (a *App) CheckInstallation(ctx context.Context) (Installation, error) {
	if err := a.needInstallation(); err != nil {
		return Installation{}, err
	}
	inst, resp, err := a.client.Apps.GetInstallation(ctx, a.cfg.InstallationID)
	if err != nil {
		return Installation{}, a.apiError(ctx, "check installation", resp, err)
	}
	return Installation{
		ID:                  inst.GetID(),
		Account:             inst.GetAccount().GetLogin(),
		RepositorySelection: inst.GetRepositorySelection(),
	}, nil
}

// InstallationToken mints a new installation access token
// (POST /app/installations/{id}/access_tokens) limited to repositories
// (names in the installation's account, without the owner) and to the
// App's TokenPermissions. At least one repository is required: podbot never
// asks for a token with the installation's full grant. The returned expiry
// is the one GitHub sent; an answer without a token or an expiry is an
// error.
func (a *App) InstallationToken(ctx context.Context, repositories []string) (Token, error) {
	if err := a.needInstallation(); err != nil {
		return Token{}, err
	}
	if len(repositories) == 0 {
		return Token{}, &errdefs.ConfigError{Key: "repo", Reason: errdefs.ErrMissingRequired,
			Msg: "installation tokens are limited to the repository being worked on, and none is known; name it (--repo OWNER/NAME)"}
	}
	for _, r := range repositories {
		if r == "" || strings.ContainsAny(r, "/ \t\n") {
			return Token{}, &errdefs.ConfigError{Key: "repo", Reason: errdefs.ErrInvalidValue,
				Msg: fmt.Sprintf("%q is not a repository name (the name alone, without its owner)", r)}
		}
	}
	perms := a.perms
	if perms == nil {
		var err error
		if perms, err = installationPermissions(nil); err != nil {
			return Token{}, err
		}
	}
	opts := &gh.InstallationTokenOptions{Repositories: slices.Clone(repositories), Permissions: perms}
	tok, resp, err := a.client.Apps.CreateInstallationToken(ctx, a.cfg.InstallationID, opts)
	if err != nil {
		return Token{}, a.apiError(ctx, "installation token", resp, err)
	}
	if tok.GetToken() == "" || tok.GetExpiresAt().IsZero() {
		return Token{}, &errdefs.GitHubError{Op: "installation token", Reason: errdefs.ErrUnavailable,
			Msg: "GitHub answered without a token or without its expiry"}
	}
	return Token{Value: tok.GetToken(), ExpiresAt: tok.GetExpiresAt().Time}, nil
}

func (a *App) needInstallation() error {
	if a.cfg.InstallationID <= 0 {
		return &errdefs.ConfigError{Key: "github.installation_id", Reason: errdefs.ErrMissingRequired,
			Msg: "an installation id is required for tokens; find it in the URL of the App's installation settings page"}
	}
	return nil
}
