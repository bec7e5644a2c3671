package podbot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/github"
)

// githubCheckTimeout bounds each GitHub request the doctor makes.
const githubCheckTimeout = 20 * time.Second

// Names of the GitHub doctor checks.
const (
	checkGitHubKey          = "github key"
	checkGitHubApp          = "github app"
	checkGitHubInstallation = "github install"
)

// doctorGitHub checks the configured GitHub App in order: the private key
// loads, the App answers GET /app, the installation is reachable. A failed
// step ends the checks, since every later one would fail for the same cause.
// Details are the github package's messages, which name the bad setting.
func doctorGitHub(ctx context.Context, g config.GitHub, newApp func(github.AppConfig) (*github.App, error), add func(string, CheckStatus, string, string)) {
	if newApp == nil {
		newApp = github.NewApp
	}
	key, _, err := github.LoadPrivateKey(g.PrivateKeyPath)
	if err != nil {
		add(checkGitHubKey, CheckFail, err.Error(), githubFix(err))
		return
	}
	add(checkGitHubKey, CheckOK, fmt.Sprintf("RSA %d-bit private key at %s", key.N.BitLen(), g.PrivateKeyPath), "")

	app, err := newApp(GitHubAppConfig(g))
	if err != nil {
		add(checkGitHubApp, CheckFail, err.Error(), githubFix(err))
		return
	}
	vctx, cancel := context.WithTimeout(ctx, githubCheckTimeout)
	info, err := app.ValidateApp(vctx)
	cancel()
	if err != nil {
		add(checkGitHubApp, CheckFail, err.Error(), githubFix(err))
		return
	}
	add(checkGitHubApp, CheckOK, fmt.Sprintf("App %s (id %d) answers at %s", info.Slug, info.ID, app.APIURL()), "")

	if g.InstallationID == 0 {
		add(checkGitHubInstallation, CheckWarn, "github.installation_id is not set: no installation tokens can be minted",
			"set github.installation_id (the number at the end of the installation's settings URL)")
		return
	}
	ictx, cancel := context.WithTimeout(ctx, githubCheckTimeout)
	inst, err := app.CheckInstallation(ictx)
	cancel()
	if err != nil {
		add(checkGitHubInstallation, CheckFail, err.Error(), githubFix(err))
		return
	}
	add(checkGitHubInstallation, CheckOK, fmt.Sprintf("installation %d on %s (repositories: %s)", inst.ID, inst.Account, inst.RepositorySelection), "")
}

// githubFix gives the one-line fix for a GitHub check failure by its reason.
func githubFix(err error) string {
	switch {
	case errors.Is(err, errdefs.ErrConfig):
		return "fix the [github] setting named above"
	case errors.Is(err, errdefs.ErrInvalidKey), errors.Is(err, errdefs.ErrMissingRequired):
		return "download a private key from the GitHub App's settings page and set github.private_key_path to it"
	case errors.Is(err, errdefs.ErrPermissionDenied) && errors.Is(err, errdefs.ErrGitHub) && !hasStatus(err):
		return "make the key file readable by the user running podbot (chmod 0600, owned by that user)"
	case errors.Is(err, errdefs.ErrNotFound) && !hasStatus(err):
		return "set github.private_key_path to the App's .pem file"
	case errors.Is(err, errdefs.ErrAuth):
		return "check github.app_id, that the key belongs to that App, and the host clock"
	case errors.Is(err, errdefs.ErrRateLimited):
		return "wait for the rate limit to reset, then run podbot doctor again"
	case errors.Is(err, errdefs.ErrPermissionDenied):
		return "grant the App the permissions it needs and accept them on the installation"
	case errors.Is(err, errdefs.ErrNotFound):
		return "check github.app_id, github.installation_id and github.api_url"
	default:
		return "check the network and github.api_url, then try again"
	}
}

// hasStatus reports whether err carries an HTTP status from GitHub.
func hasStatus(err error) bool {
	var ge *errdefs.GitHubError
	return errors.As(err, &ge) && ge.Status != 0
}
