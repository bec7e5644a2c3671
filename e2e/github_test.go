//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/github"
	"github.com/podbot/podbot/github/githubtest"
	"github.com/podbot/podbot/launchplan"
)

// Token timing of the fake GitHub: tokens live tokenTTL and are replaced
// refreshBuffer before they expire, so one refresh happens about 25 s after
// the first token, inside the test but after the launch's clone (the fake
// accepts only the latest token, so a refresh in the middle of a clone
// would fail it; GitHub keeps older tokens valid until they expire).
const (
	tokenTTL      = 40 * time.Second
	refreshBuffer = 15 * time.Second
)

// fakeGitHubApp starts a fake GitHub API that verifies the App JWT and
// issues tokens living tokenTTL (only the latest one valid), and returns it
// with an App client pointed at it and the key file the App uses.
func fakeGitHubApp(t *testing.T) (*githubtest.Server, *github.App, string) {
	t.Helper()
	return fakeGitHubAppTTL(t, tokenTTL)
}

// fakeGitHubAppTTL is fakeGitHubApp with tokens living ttl.
func fakeGitHubAppTTL(t *testing.T, ttl time.Duration) (*githubtest.Server, *github.App, string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	gh := githubtest.NewServer(t, &key.PublicKey, githubtest.Options{TokenTTL: ttl})
	app, err := github.NewApp(github.AppConfig{AppID: gh.AppID(), InstallationID: gh.InstallationID(),
		KeyPath: keyPath, APIURL: gh.URL, HTTPClient: gh.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return gh, app, keyPath
}

// readToken reads the token file on the host.
func readToken(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the token file: %v", err)
	}
	return string(b)
}

// waitForNewToken polls the token file until it holds something other than
// old, or fails after within.
func waitForNewToken(t *testing.T, ctx context.Context, path, old string, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 && string(b) != old {
			return string(b)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the token file %s was not refreshed within %s", path, within)
	return ""
}

// ghFixture is what the GitHub e2e tests share: a fake GitHub App whose
// tokens live ttl, the host repository octo-org/demo (branch feature)
// behind a git server that accepts only the App's current token, an engine
// connection, a runtime directory, a container name removed on cleanup,
// and a launch config that clones from that server.
type ghFixture struct {
	gh      *githubtest.Server
	app     *github.App
	keyPath string
	repo    *hostRepo
	gs      *gitServer
	conn    *engine.Conn
	rt      string
	name    string
	cfg     config.Config
}

func newGHFixture(t *testing.T, ctx context.Context, e engineUnderTest, ttl time.Duration, purpose string) *ghFixture {
	t.Helper()
	f := &ghFixture{}
	f.gh, f.app, f.keyPath = fakeGitHubAppTTL(t, ttl)
	root := t.TempDir()
	f.repo = newHostRepo(t, root, "octo-org/demo", "feature")
	f.gs = startGitServer(t, ctx, e, root, f.gh.Valid)
	f.conn = connectEngine(t, ctx, e)
	f.rt = runtimeDir(t)
	f.name = testName(e, purpose)
	removeOnCleanup(t, e, f.name)
	f.cfg = launchConfig()
	f.cfg.GitHub.CloneBaseURL = f.gs.BaseURL
	return f
}

// launchOptions launches f.name from octo-org/demo, branch feature, with
// the App's tokens and the sidecar (git's askpass program in the sandbox).
func (f *ghFixture) launchOptions() podbot.LaunchOptions {
	return podbot.LaunchOptions{
		Config: f.cfg, Intent: launchplan.IntentInteractive, Name: f.name,
		Repo: "octo-org/demo", Branch: "feature", RuntimeDir: f.rt, TokenSource: f.app,
		SidecarPath: filepath.Join(suite.bin, "podbot-sidecar"),
	}
}

// TestGitHubTokenRefreshCloneFetch drives the library's Launch with a GitHub
// App against a fake GitHub API and a git server on the host that accepts
// only the currently valid token: the clone works through the askpass
// helper, the token file is refreshed, a later fetch works with the fresh
// token while the old one is refused, and podbot token-daemon takes over
// the container and cleans up when it is gone.
func TestGitHubTokenRefreshCloneFetch(t *testing.T) {
	t.Parallel() // long, and touches only what it names (see forEachEngine)
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		f := newGHFixture(t, ctx, e, tokenTTL, "ghrefresh")
		gh, gs, keyPath, repo, conn, rt, name := f.gh, f.gs, f.keyPath, f.repo, f.conn, f.rt, f.name
		firstSHA := strings.TrimSpace(git(t, repo.work, "rev-parse", "HEAD"))
		f.cfg.Workspace.Source = config.SourceGitHubClone
		f.cfg.GitHub.TokenRefreshBuffer = refreshBuffer
		sb := launch(t, ctx, conn, f.launchOptions())

		// The token file: 0600 in a 0700 directory on the host, holding the
		// token GitHub issued, labelled for podbot token-daemon.
		dir := filepath.Join(rt, "podbot", name)
		file := filepath.Join(dir, "ghapp_token")
		if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("token directory %s: %v (mode %v), want 0700", dir, err, st.Mode())
		}
		if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("token file %s: %v (mode %v), want 0600", file, err, st.Mode())
		}
		first := readToken(t, file)
		if cur, _, ok := gh.CurrentToken(); !ok || cur != first {
			t.Fatal("the token file does not hold the token GitHub issued last")
		}
		info, err := e.API.ContainerInspect(ctx, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if info.Config.Labels[launchplan.LabelGitHubToken] != "true" {
			t.Errorf("container labels %v lack %s=true", info.Config.Labels, launchplan.LabelGitHubToken)
		}

		// Inside: the clone is at the branch's commit, made with the token;
		// the token file is there and read-only.
		if got := strings.TrimSpace(mustExecIn(t, ctx, conn, sb, "git", "-C", "/work/demo", "rev-parse", "HEAD")); got != firstSHA {
			t.Errorf("clone HEAD = %s, want %s", got, firstSHA)
		}
		if gs.servedWith(first) == 0 {
			t.Error("the git server never served a request with the installation token")
		}
		if got := mustExecIn(t, ctx, conn, sb, "cat", "/run/secrets/ghapp_token"); got != first {
			t.Error("the container sees a different token than the host file holds")
		}
		for _, argv := range [][]string{
			{"sh", "-c", "printf x > /run/secrets/ghapp_token"},
			{"touch", "/run/secrets/other"},
			{"rm", "-f", "/run/secrets/ghapp_token"},
		} {
			if r := execIn(t, ctx, conn, sb, argv...); r.code == 0 {
				t.Errorf("%v succeeded inside the container; the token mount must be read-only", argv)
			}
		}
		if readToken(t, file) != first {
			t.Fatal("the container changed the token file")
		}

		// A refresh replaces the token; the old one is refused from then on.
		second := waitForNewToken(t, ctx, file, first, tokenTTL+10*time.Second)
		if gh.Valid(first) || !gh.Valid(second) {
			t.Fatalf("after the refresh: old valid %v, new valid %v; want false, true", gh.Valid(first), gh.Valid(second))
		}
		if code := gs.status(t, ctx, "octo-org/demo", first); code != http.StatusUnauthorized {
			t.Errorf("git server answered the old token with %d, want 401", code)
		}
		if code := gs.status(t, ctx, "octo-org/demo", second); code != http.StatusOK {
			t.Errorf("git server answered the new token with %d, want 200", code)
		}

		// A later fetch in the container succeeds with the fresh token.
		newSHA := repo.commit(t, "feature", "later.txt", "later\n")
		before := gs.servedWith(second)
		mustExecIn(t, ctx, conn, sb, "git", "-c", "credential.helper=", "-C", "/work/demo", "fetch", "--quiet", "origin")
		if got := strings.TrimSpace(mustExecIn(t, ctx, conn, sb, "git", "-C", "/work/demo", "rev-parse", "origin/feature")); got != newSHA {
			t.Errorf("origin/feature after fetch = %s, want %s", got, newSHA)
		}
		if gs.servedWith(second) <= before {
			t.Error("the fetch was not served with the refreshed token")
		}

		// podbot token-daemon takes over the container: it refreshes the
		// file, never logs a token, and removes the directory when the
		// container is gone.
		if err := sb.Close(ctx, false); err != nil {
			t.Fatal(err)
		}
		tomlCfg := fmt.Sprintf("[github]\napp_id = %d\ninstallation_id = %d\nprivate_key_path = %q\napi_url = %q\ntoken_refresh_buffer = %q\n",
			gh.AppID(), gh.InstallationID(), keyPath, gh.URL, refreshBuffer.String())
		cmd := podbotCmd(t, ctx, e, tomlCfg, "token-daemon", "--container", name, "--check-interval", "1s", "--log-level", "debug")
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+rt)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		third := waitForNewToken(t, ctx, file, second, 30*time.Second)
		if !gh.Valid(third) {
			t.Error("the token podbot token-daemon wrote is not the valid one")
		}
		before = gs.servedWith(third)
		mustExecIn(t, ctx, conn, sb, "git", "-c", "credential.helper=", "-C", "/work/demo", "fetch", "--quiet", "origin")
		if gs.servedWith(third) <= before {
			t.Error("a fetch after podbot token-daemon's refresh was not served with its token")
		}
		// Through podbot, so the sandbox's egress proxy and network go too.
		if _, err := podbot.Remove(ctx, conn, sb.Name, podbot.RemoveOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("podbot token-daemon exited with %v after its container went away\n%s", err, stderr.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("podbot token-daemon did not exit after its container went away\n%s", stderr.String())
		}
		for _, tok := range []string{first, second, third} {
			if strings.Contains(stderr.String(), tok) {
				t.Error("podbot token-daemon logged a token value")
			}
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("token directory left behind after the container went away: %v", err)
		}
		if rows := containersNamed(t, ctx, e, name); len(rows) != 0 {
			t.Errorf("containers left behind: %d", len(rows))
		}
	})
}

// TestGitHubCleanupLeavesNothing checks that closing a launched sandbox
// removes its container and its token directory.
func TestGitHubCleanupLeavesNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		f := newGHFixture(t, ctx, e, time.Hour, "ghclean")
		conn, rt, name := f.conn, f.rt, f.name
		sb, err := podbot.Launch(ctx, conn, f.launchOptions())
		if err != nil {
			t.Fatalf("Launch: %v", err)
		}
		if err := sb.Close(ctx, true); err != nil {
			t.Fatal(err)
		}
		if rows := containersNamed(t, ctx, e, name); len(rows) != 0 {
			t.Errorf("containers left behind: %d", len(rows))
		}
		if _, err := os.Stat(filepath.Join(rt, "podbot", name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("token directory left behind: %v", err)
		}

		// A clone of a branch that does not exist fails the launch, and
		// the failed launch removes what it made.
		bad := testName(e, "ghbad")
		removeOnCleanup(t, e, bad)
		opts := f.launchOptions()
		opts.Name, opts.Branch = bad, "no-such-branch"
		_, err = podbot.Launch(ctx, conn, opts)
		var se *podbot.StepError
		if !errors.As(err, &se) || se.Step != podbot.StepWorkspace {
			t.Fatalf("Launch of a missing branch: %v, want a %s step error", err, podbot.StepWorkspace)
		}
		if rows := containersNamed(t, ctx, e, bad); len(rows) != 0 {
			t.Errorf("a failed launch left %d containers", len(rows))
		}
		if _, err := os.Stat(filepath.Join(rt, "podbot", bad)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a failed launch left its token directory: %v", err)
		}
	})
}

// TestGitHubTokenDaemonAll runs podbot token-daemon --all: it finds a
// launched container by its label in the engine's list, refreshes its
// token, removes the token directory once the container is gone, and exits
// cleanly on SIGINT.
func TestGitHubTokenDaemonAll(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		f := newGHFixture(t, ctx, e, time.Hour, "ghall")
		gh, keyPath, conn, rt, name := f.gh, f.keyPath, f.conn, f.rt, f.name
		sb := launch(t, ctx, conn, f.launchOptions())
		if err := sb.Close(ctx, false); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(rt, "podbot", name)
		first := readToken(t, filepath.Join(dir, "ghapp_token"))

		tomlCfg := fmt.Sprintf("[github]\napp_id = %d\ninstallation_id = %d\nprivate_key_path = %q\napi_url = %q\n",
			gh.AppID(), gh.InstallationID(), keyPath, gh.URL)
		cmd := podbotCmd(t, ctx, e, tomlCfg, "token-daemon", "--all", "--list-interval", "1s", "--check-interval", "1s")
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+rt)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		defer func() { _ = cmd.Process.Kill() }()

		second := waitForNewToken(t, ctx, filepath.Join(dir, "ghapp_token"), first, 30*time.Second)
		if got := mustExecIn(t, ctx, conn, sb, "cat", "/run/secrets/ghapp_token"); got != second {
			t.Error("the container does not see the token podbot token-daemon wrote")
		}
		if err := conn.Remove(ctx, sb.ID, true); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for _, err := os.Stat(dir); err == nil && time.Now().Before(deadline); _, err = os.Stat(dir) {
			time.Sleep(200 * time.Millisecond)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("token directory left behind after the container went away: %v\n%s", err, out.String())
		}
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("podbot token-daemon --all exited with %v on SIGINT\n%s", err, out.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("podbot token-daemon --all did not stop on SIGINT\n%s", out.String())
		}
		if strings.Contains(out.String(), first) || strings.Contains(out.String(), second) {
			t.Error("podbot token-daemon logged a token value")
		}
	})
}
