package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"

	gh "github.com/google/go-github/v60/github"

	"github.com/podbot/podbot/errdefs"
)

// maxRemoteMessage bounds how much of GitHub's own error text is repeated.
const maxRemoteMessage = 200

// apiError maps a failed API call to an *errdefs.GitHubError.
func (a *App) apiError(ctx context.Context, op string, resp *gh.Response, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		reason := errdefs.ErrTimeout
		if errors.Is(ctxErr, context.Canceled) {
			reason = errdefs.ErrUnavailable
		}
		return &errdefs.GitHubError{Op: op, Reason: reason, Msg: "request to GitHub was cut short", Err: ctxErr}
	}
	var httpResp *http.Response
	if resp != nil {
		httpResp = resp.Response
	}
	if httpResp == nil {
		return &errdefs.GitHubError{Op: op, Reason: errdefs.ErrUnavailable,
			Msg: fmt.Sprintf("cannot reach GitHub at %s; check the network and github.api_url", a.cfg.APIURL), Err: err}
	}
	status := httpResp.StatusCode
	remote := remoteMessage(err)
	e := &errdefs.GitHubError{Op: op, Status: status}
	switch {
	case status == http.StatusUnauthorized:
		e.Reason = errdefs.ErrAuth
		e.Msg = fmt.Sprintf("GitHub rejected the App credentials; check github.app_id (%d), that github.private_key_path holds a current private key of that App, and that the host clock is correct", a.cfg.AppID)
	case status == http.StatusTooManyRequests || (status == http.StatusForbidden && isRateLimited(httpResp, err)):
		e.Reason = errdefs.ErrRateLimited
		e.Msg = "GitHub rate limit reached" + retryHint(httpResp, err)
	case status == http.StatusForbidden:
		e.Reason = errdefs.ErrPermissionDenied
		e.Msg = "the App lacks permission for this request; check the App's permissions and that the installation has accepted them"
	case status == http.StatusNotFound && op == "validate app":
		e.Reason = errdefs.ErrNotFound
		e.Msg = fmt.Sprintf("App not found: no GitHub App with github.app_id %d at %s (for Enterprise Server set github.api_url)", a.cfg.AppID, a.cfg.APIURL)
	case status == http.StatusNotFound:
		e.Reason = errdefs.ErrNotFound
		e.Msg = fmt.Sprintf("installation not found: github.installation_id %d is not an installation of App %d; check both ids and that the App is still installed", a.cfg.InstallationID, a.cfg.AppID)
	case status >= 500:
		e.Reason = errdefs.ErrUnavailable
		e.Msg = "GitHub is unavailable; try again later"
	default:
		e.Reason = errdefs.ErrUnavailable
		e.Msg = "unexpected answer from GitHub"
	}
	if remote != "" {
		e.Msg += fmt.Sprintf(" (GitHub said: %q)", remote)
	}
	return e
}

// isRateLimited tells a 403 rate limit from a 403 permission failure.
func isRateLimited(resp *http.Response, err error) bool {
	var rl *gh.RateLimitError
	var abuse *gh.AbuseRateLimitError
	if errors.As(err, &rl) || errors.As(err, &abuse) {
		return true
	}
	return resp.Header.Get("X-RateLimit-Remaining") == "0" || resp.Header.Get("Retry-After") != ""
}

// retryHint says when GitHub allows the next request, when it said so.
func retryHint(resp *http.Response, err error) string {
	var abuse *gh.AbuseRateLimitError
	if errors.As(err, &abuse) && abuse.RetryAfter != nil {
		return fmt.Sprintf("; retry after %s", abuse.RetryAfter.Round(time.Second))
	}
	var rl *gh.RateLimitError
	if errors.As(err, &rl) && !rl.Rate.Reset.IsZero() {
		return fmt.Sprintf("; the limit resets at %s", rl.Rate.Reset.UTC().Format(time.RFC3339))
	}
	if v := resp.Header.Get("Retry-After"); v != "" {
		return fmt.Sprintf("; retry after %s seconds", sanitize(v, 20))
	}
	return "; wait and try again"
}

// remoteMessage extracts GitHub's own error message, bounded and stripped
// of control characters since it comes from the network.
func remoteMessage(err error) string {
	var er *gh.ErrorResponse
	var rl *gh.RateLimitError
	var abuse *gh.AbuseRateLimitError
	switch {
	case errors.As(err, &er):
		return sanitize(er.Message, maxRemoteMessage)
	case errors.As(err, &rl):
		return sanitize(rl.Message, maxRemoteMessage)
	case errors.As(err, &abuse):
		return sanitize(abuse.Message, maxRemoteMessage)
	}
	return ""
}

func sanitize(s string, limit int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > limit {
		cut := limit
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
