//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
)

// confirmedRe matches the progress line of a claimed allowlist member's
// policy, with how long the proxy took to confirm it.
var confirmedRe = regexp.MustCompile(`confirmed by the proxy in ([0-9.]+) ms`)

// TestPoolRunAllowlist: with the default network.mode (allowlist), podbot
// pool create makes an agent member with its own egress proxy (named after
// the member, denying everything); podbot run --pool --allow-host claims
// it and the stub agent, first thing, reaches the allowed host through the
// proxy while the denied one is refused and logged: the claimer's policy
// was in force before the agent started. The claimed sandbox, renamed,
// still has its proxy for podbot stop/start, podbot network show, allow
// (live) and log, and podbot rm removes the proxy, the network and the
// egress directory named after the member. On both engines.
func TestPoolRunAllowlist(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		gw := bridgeGateway(t, ctx, e)
		port := outsideHTTP(t)
		allowed := fmt.Sprintf("http://allowed.test:%d/", port)
		denied := fmt.Sprintf("http://denied.test:%d/", port)
		agent := "python3 - " + allowed + " " + denied + " <<'PY'\n" + fetchScript + "PY\necho podbot-stub-agent-ready\nexit 7"
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		cfg := fmt.Sprintf(`[agent]
kind = "custom"
command = "/bin/sh"
args = ["-c", %s]
[creds]
copy_claude = false
copy_codex = false
[network]
resolve = ["allowed.test=%s", "denied.test=%s"]
`, q(agent), gw, gw)
		p := newPoolRunEnv(t, e, "egress", cfg)
		p.mustRun(t, ctx, "pool", "create", p.name, "--size", "1", "--kind", "agent")
		members := p.containers(t, ctx)
		if len(members) != 1 {
			t.Fatalf("pool create made %d containers, want 1", len(members))
		}
		member := strings.TrimPrefix(members[0].Names[0], "/")
		if members[0].Labels[egressnet.LabelName] != member || members[0].Labels[egressnet.LabelMode] != "allowlist" {
			t.Fatalf("member %s labels: %v", member, members[0].Labels)
		}
		egDir := members[0].Labels[podbot.LabelEgressDir]
		conn := poolConn(t, ctx, e)
		if in, err := conn.Inspect(ctx, egressnet.ProxyName(member), false); err != nil || !in.State.Running {
			t.Fatalf("member %s has no running proxy: %v", member, err)
		}
		pol, err := egressnet.ReadPolicy(egressnet.DirsAt(egDir).PolicyPath())
		if err != nil || len(pol.Rules) != 0 {
			t.Fatalf("a member's policy must deny everything until its claim: %+v %v", pol, err)
		}

		name := testName(e, "poolegress")
		removeOnCleanup(t, e, name)
		cmd := p.cmd(ctx, "run", "--pool", p.name, "--name", name, "--allow-host", fmt.Sprintf("allowed.test:%d", port))
		pr := startOnPTY(t, cmd, 24, 200)
		code := pr.wait(t, 2*time.Minute)
		out := pr.out.String()
		if code != 7 {
			t.Fatalf("podbot run --pool: exit %d, want the agent's 7\n%s", code, out)
		}
		if m := claimedRe.FindStringSubmatch(out); m == nil || m[1] != member || m[4] != name {
			t.Fatalf("no warm claim of %s:\n%s", member, out)
		}
		if m := confirmedRe.FindStringSubmatch(out); m != nil {
			claim := claimedRe.FindStringSubmatch(out)
			t.Logf("%s: claim %s ms, then the claimer's policy in force (written and confirmed by the proxy) %s ms", e.Name, claim[3], m[1])
		}
		for _, want := range []string{allowed + " 200 outside allowed.test", denied + " refused", "podbot: network: egress policy (",
			"in force on the member's proxy " + egressnet.ProxyName(member)} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		// The refusal is in the claimed sandbox's decision log.
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := p.run(t, ctx, "network", "log", "--json", name)
			if r.Code == 0 && strings.Contains(r.Stdout, `"host":"denied.test"`) && strings.Contains(r.Stdout, `"decision":"deny"`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the decision log lacks the refusal of denied.test: %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
			}
			time.Sleep(200 * time.Millisecond)
		}
		var show podbot.NetworkPolicy
		decodeJSON(t, p.mustRun(t, ctx, "network", "show", "--json", name).Stdout, &show)
		if show.PolicyFile != egressnet.DirsAt(egDir).PolicyPath() || len(show.Policy.Rules) == 0 {
			t.Fatalf("network show on the claimed sandbox: %+v", show)
		}

		// podbot run stopped it (and its proxy); start finds the proxy by
		// the member's name, and a live allow reaches the running proxy.
		p.mustRun(t, ctx, "start", name)
		in, err := conn.Inspect(ctx, name, false)
		if err != nil {
			t.Fatal(err)
		}
		fetch := func(u string) string {
			var o, eo bytes.Buffer
			c, err := conn.Exec(ctx, in.ID, engine.ExecOptions{Cmd: []string{"python3", "-c", fetchScript, u}, User: in.Config.User, Stdout: &o, Stderr: &eo})
			if err != nil || c != 0 {
				t.Fatalf("fetch %s: %d %v %s", u, c, err, eo.String())
			}
			return o.String()
		}
		if got := fetch(denied); !strings.Contains(got, " refused") {
			t.Fatalf("denied.test before network allow: %s", got)
		}
		p.mustRun(t, ctx, "network", "allow", name, fmt.Sprintf("denied.test:%d", port))
		deadline = time.Now().Add(10 * time.Second)
		for !strings.Contains(fetch(denied), " 200 outside denied.test") {
			if time.Now().After(deadline) {
				t.Fatal("network allow did not take effect on the claimed sandbox")
			}
			time.Sleep(300 * time.Millisecond)
		}

		// rm takes the proxy, network and directory named after the member.
		p.mustRun(t, ctx, "rm", "--force", name)
		if _, err := conn.Inspect(ctx, egressnet.ProxyName(member), false); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("proxy %s still there after rm: %v", egressnet.ProxyName(member), err)
		}
		if _, err := conn.InspectNetwork(ctx, egressnet.NetworkName(member)); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("network %s still there after rm: %v", egressnet.NetworkName(member), err)
		}
		if _, err := os.Stat(egDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("egress directory %s still there after rm: %v", egDir, err)
		}
	})
}

// TestPoolRunGitHubToken: with a GitHub App configured, podbot pool create
// gives an agent member (allowlist, the default) an empty token directory
// named after the member (mounted read-only at /run/secrets); podbot run
// --pool --repo claims it, puts its policy (which allows the clone origin)
// in force, mints the installation token limited to the claimer's
// repository into that directory, clones through it and the proxy (the git
// server takes only a valid token), and the agent's git has the askpass
// program; --rm removes the directory and its scope file with the sandbox.
// Once every member is claimed and removed and the pool with them, no
// container or network of the pool is left on the engine. On both engines.
func TestPoolRunGitHubToken(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		f := newGHFixture(t, ctx, e, time.Hour, "pooltoken")
		sha := strings.TrimSpace(git(t, f.repo.work, "rev-parse", "HEAD"))
		agent := `echo "stub-head=$(git -C /work/demo rev-parse HEAD 2>&1)"
echo "stub-askpass=$GIT_ASKPASS"
echo "stub-token-bytes=$(wc -c < /run/secrets/ghapp_token)"
echo podbot-stub-agent-ready
exit 7`
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		cfg := fmt.Sprintf(`[agent]
kind = "custom"
command = "/bin/sh"
args = ["-c", %s]
[creds]
copy_claude = false
copy_codex = false
[workspace]
source = "github_clone"
[github]
app_id = %d
installation_id = %d
private_key_path = %q
api_url = %q
clone_base_url = %q
`, q(agent), f.gh.AppID(), f.gh.InstallationID(), f.keyPath, f.gh.URL, f.gs.BaseURL)
		p := newPoolRunEnv(t, e, "token", cfg)
		rt := ""
		for _, kv := range p.env {
			if v, ok := strings.CutPrefix(kv, "XDG_RUNTIME_DIR="); ok {
				rt = v
			}
		}
		p.mustRun(t, ctx, "pool", "create", p.name, "--size", "3", "--kind", "agent") // network.mode: allowlist
		members := p.containers(t, ctx)
		if len(members) != 3 {
			t.Fatalf("pool create made %d containers, want 3", len(members))
		}
		for _, m := range members {
			member := strings.TrimPrefix(m.Names[0], "/")
			if m.Labels[podbot.LabelTokenDir] != member || m.Labels["podbot.github_token"] != "true" {
				t.Fatalf("member %s labels: %v", member, m.Labels)
			}
			dir := filepath.Join(rt, "podbot", member)
			if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
				t.Fatalf("member token directory %s: %v", dir, err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Fatalf("an unclaimed member's token directory holds %v; want it empty", ents)
			}
		}
		before := len(f.gh.TokenRequests())

		name := testName(e, "pooltoken")
		removeOnCleanup(t, e, name)
		cmd := p.cmd(ctx, "run", "--pool", p.name, "--name", name, "--rm", "--repo", "octo-org/demo", "--branch", "feature")
		pr := startOnPTY(t, cmd, 24, 200)
		code := pr.wait(t, 2*time.Minute)
		out := pr.out.String()
		if code != 7 {
			t.Fatalf("podbot run --pool: exit %d, want the agent's 7\n%s", code, out)
		}
		m := claimedRe.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no warm claim:\n%s", out)
		}
		dir := filepath.Join(rt, "podbot", m[1])
		for _, want := range []string{"stub-head=" + sha, "stub-askpass=" + podbot.SidecarTarget, "podbot-stub-agent-ready",
			"in force on the member's proxy " + egressnet.ProxyName(m[1])} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "stub-token-bytes=0") || !strings.Contains(out, "stub-token-bytes=") {
			t.Errorf("the agent saw no token at /run/secrets/ghapp_token:\n%s", out)
		}
		reqs := f.gh.TokenRequests()[before:]
		if len(reqs) == 0 {
			t.Fatal("the claim minted no installation token")
		}
		for _, r := range reqs {
			if len(r.Repositories) != 1 || r.Repositories[0] != "demo" {
				t.Errorf("token request %+v; want it limited to [demo]", r)
			}
		}
		cur, _, ok := f.gh.CurrentToken()
		if !ok || f.gs.servedWith(cur) == 0 {
			t.Error("the git server never served the clone with the installation token")
		}
		if ok && strings.Contains(out, cur) {
			t.Error("the token value reached podbot's output")
		}
		for _, p := range []string{dir, dir + ".scope"} {
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s left after --rm: %v", p, err)
			}
		}

		// The second member, claimed and kept: podbot run stops it (its
		// token directory goes), podbot start mints a token into the
		// member-named directory again from the recorded scope, podbot
		// token-daemon --all finds it under the new container name and
		// refreshes it, and podbot rm removes directory and scope.
		kept := testName(e, "pooltoken-kept")
		removeOnCleanup(t, e, kept)
		pr = startOnPTY(t, p.cmd(ctx, "run", "--pool", p.name, "--name", kept, "--repo", "octo-org/demo", "--branch", "feature"), 24, 200)
		if code := pr.wait(t, 2*time.Minute); code != 7 {
			t.Fatalf("second podbot run --pool: exit %d\n%s", code, pr.out.String())
		}
		m = claimedRe.FindStringSubmatch(pr.out.String())
		if m == nil {
			t.Fatalf("no warm claim:\n%s", pr.out.String())
		}
		dir = filepath.Join(rt, "podbot", m[1])
		if _, err := os.Stat(filepath.Join(dir, "ghapp_token")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a token stayed on disk for the stopped sandbox: %v", err)
		}
		p.mustRun(t, ctx, "start", kept)
		first := readToken(t, filepath.Join(dir, "ghapp_token"))
		daemon := p.cmd(ctx, "token-daemon", "--all", "--list-interval", "1s", "--check-interval", "1s")
		var dout bytes.Buffer
		daemon.Stdout, daemon.Stderr = &dout, &dout
		if err := daemon.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- daemon.Wait() }()
		defer func() { _ = daemon.Process.Kill() }()
		second := waitForNewToken(t, ctx, filepath.Join(dir, "ghapp_token"), first, 30*time.Second)
		if strings.Contains(dout.String(), "not keeping a token") {
			t.Errorf("token-daemon --all refused a pool container:\n%s", dout.String())
		}
		for _, r := range f.gh.TokenRequests()[before:] {
			if len(r.Repositories) != 1 || r.Repositories[0] != "demo" {
				t.Errorf("token request %+v; want it limited to [demo]", r)
			}
		}
		p.mustRun(t, ctx, "rm", "--force", kept)
		for _, p := range []string{dir, dir + ".scope"} {
			deadline := time.Now().Add(20 * time.Second)
			for _, err := os.Stat(p); err == nil && time.Now().Before(deadline); _, err = os.Stat(p) {
				time.Sleep(200 * time.Millisecond)
			}
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s left after rm: %v", p, err)
			}
		}
		if err := daemon.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("podbot token-daemon --all did not stop on SIGINT\n%s", dout.String())
		}
		if strings.Contains(dout.String(), first) || strings.Contains(dout.String(), second) {
			t.Error("podbot token-daemon logged a token value")
		}

		// The third member, claimed, kept, then removed through the
		// engine directly (not podbot rm): its token directory and scope
		// file stay until podbot prune, which lists them once they are
		// past the grace. Dry run only: the engines are shared.
		direct := testName(e, "pooltoken-direct")
		removeOnCleanup(t, e, direct)
		pr = startOnPTY(t, p.cmd(ctx, "run", "--pool", p.name, "--name", direct, "--repo", "octo-org/demo", "--branch", "feature"), 24, 200)
		if code := pr.wait(t, 2*time.Minute); code != 7 {
			t.Fatalf("third podbot run --pool: exit %d\n%s", code, pr.out.String())
		}
		m = claimedRe.FindStringSubmatch(pr.out.String())
		if m == nil {
			t.Fatalf("no warm claim:\n%s", pr.out.String())
		}
		// Removed outside podbot, the member leaves its proxy, network and
		// egress directory (named after it) for podbot prune, which the
		// shared engines do not allow: the test removes them itself once
		// prune has been asked, and on cleanup when it fails before.
		removeOnCleanup(t, e, m[1])
		in, err := e.API.ContainerInspect(ctx, direct)
		if err != nil || in.Config == nil || in.Config.Labels[egressnet.LabelName] != m[1] {
			t.Fatalf("the claimed member %s does not record its egress name: %v", direct, err)
		}
		egressDir := in.Config.Labels[podbot.LabelEgressDir]
		if out, err := exec.CommandContext(ctx, "sh", "-c", engineCLI(e)+" rm -f "+direct).CombinedOutput(); err != nil {
			t.Fatalf("remove through the engine: %v\n%s", err, out)
		}
		scope := filepath.Join(rt, "podbot", m[1]+".scope")
		old := time.Now().Add(-2 * time.Minute)
		if err := os.Chtimes(scope, old, old); err != nil {
			t.Fatalf("the claimed member's scope file: %v", err)
		}
		r := p.run(t, ctx, "prune", "--dry-run", "--json")
		var pruned podbot.PruneResult
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &pruned) != nil || !slices.Contains(pruned.TokenDirs, m[1]) {
			t.Fatalf("prune --dry-run does not list the gone member's token directory %s: exit %d\n%s\n%s", m[1], r.Code, r.Stdout, r.Stderr)
		}
		if _, err := os.Stat(scope); err != nil {
			t.Errorf("prune --dry-run removed %s: %v", scope, err)
		}
		removeEgressOf(t, ctx, e, m[1], egressDir)

		// Every member was claimed and removed (by --rm, podbot rm, or
		// above); podbot pool rm removes whatever is left of the pool, and
		// nothing of it may stay on the engine.
		p.mustRun(t, ctx, "pool", "rm", p.name)
		if left := p.leftOnEngine(t, ctx, name, kept, direct); len(left) != 0 {
			t.Errorf("left on the engine after the pool's removal: %v", left)
		}
	})
}

// TestPoolCreateAllowlist: podbot create --pool claims an allowlist member
// and puts the configuration's policy (network.allow) in force before it
// returns: the first request from the sandbox to the allowed host goes
// through, the denied one is refused; rm removes the member's proxy.
func TestPoolCreateAllowlist(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		gw := bridgeGateway(t, ctx, e)
		port := outsideHTTP(t)
		p := newPoolRunEnv(t, e, "egcreate", fmt.Sprintf(`[network]
allow = ["allowed.test:%d"]
resolve = ["allowed.test=%s", "denied.test=%s"]
`, port, gw, gw))
		p.mustRun(t, ctx, "pool", "create", p.name, "--size", "1", "--kind", "agent")
		members := p.containers(t, ctx)
		if len(members) != 1 {
			t.Fatalf("pool create made %d containers, want 1", len(members))
		}
		member := strings.TrimPrefix(members[0].Names[0], "/")
		name := testName(e, "poolegcreate")
		removeOnCleanup(t, e, name)
		p.mustRun(t, ctx, "create", "--pool", p.name, "--name", name)
		conn := poolConn(t, ctx, e)
		in, err := conn.Inspect(ctx, name, false)
		if err != nil {
			t.Fatal(err)
		}
		if in.ID != members[0].ID {
			t.Fatalf("create --pool made %s instead of claiming %s", in.ID, members[0].ID)
		}
		var o, eo bytes.Buffer
		c, err := conn.Exec(ctx, in.ID, engine.ExecOptions{Cmd: []string{"python3", "-c", fetchScript,
			fmt.Sprintf("http://allowed.test:%d/", port), fmt.Sprintf("http://denied.test:%d/", port)}, User: in.Config.User, Stdout: &o, Stderr: &eo})
		if err != nil || c != 0 {
			t.Fatalf("fetch: %d %v %s", c, err, eo.String())
		}
		lines := strings.Split(strings.TrimSpace(o.String()), "\n")
		if len(lines) != 2 || !strings.Contains(lines[0], " 200 outside allowed.test") || !strings.Contains(lines[1], " refused") {
			t.Fatalf("the first requests after create --pool: want allowed then refused, got:\n%s", o.String())
		}
		p.mustRun(t, ctx, "rm", "--force", name)
		if _, err := conn.Inspect(ctx, egressnet.ProxyName(member), false); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("proxy %s still there after rm: %v", egressnet.ProxyName(member), err)
		}
	})
}
