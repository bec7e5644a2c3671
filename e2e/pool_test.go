//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/pool"
	"github.com/podbot/podbot/sandbox"
	"github.com/podbot/podbot/tools"
)

// TestPoolConcurrentClaims: a pool of 4; 16 claims by podbot processes, 4
// running at once, give 16 distinct sandboxes (4 warm, 12 cold, each
// reported), none handed out twice; the refiller brings the pool back to
// 4; a member killed from outside is replaced; with --wait a claim takes
// the member the refiller makes; pool rm leaves the claimed ones running;
// a claimed sandbox is an ordinary one for ps, exec and rm.
func TestPoolConcurrentClaims(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		p := newPoolEnv(t, e, "cc")
		p.mustRun(t, ctx, "pool", "create", p.name, "--size", "4", "--kind", "agent", "--network", "none")
		if r := p.ls(t, ctx); r.Ready != 4 {
			t.Fatalf("after pool create: %+v", r)
		}

		type claim struct {
			name string
			c    claimLine
		}
		var (
			mu     sync.Mutex
			claims []claim
			wg     sync.WaitGroup
		)
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 4 {
					res := p.run(t, ctx, "create", "--pool", p.name)
					c, ok := parseClaim(res.Stderr)
					if res.Code != 0 || !ok {
						t.Errorf("worker %d: create --pool: exit %d, claim reported %v\n%s", w, res.Code, ok, res.Stderr)
						return
					}
					mu.Lock()
					claims = append(claims, claim{strings.TrimSpace(res.Stdout), c})
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		ids, names, members := map[string]bool{}, map[string]bool{}, map[string]bool{}
		outcomes := map[string]int{}
		for _, c := range claims {
			in, err := e.API.ContainerInspect(ctx, c.name)
			if err != nil {
				t.Fatalf("claimed sandbox %s: %v", c.name, err)
			}
			if !in.State.Running || in.State.Paused {
				t.Errorf("claimed sandbox %s is not running unpaused: %+v", c.name, in.State)
			}
			if ids[in.ID] || names[c.name] {
				t.Errorf("sandbox %s handed out twice", c.name)
			}
			ids[in.ID], names[c.name] = true, true
			outcomes[c.c.Outcome]++
			if c.c.Outcome == podbot.ClaimWarm {
				if members[c.c.Member] || !strings.HasPrefix(c.c.Member, podbot.MemberPrefix+p.name+"-") {
					t.Errorf("member %q reported twice or badly", c.c.Member)
				}
				members[c.c.Member] = true
			}
		}
		if len(ids) != 16 || outcomes[podbot.ClaimWarm] != 4 || outcomes[podbot.ClaimCold] != 12 {
			t.Fatalf("%d distinct sandboxes, outcomes %v; want 16, 4 warm and 12 cold", len(ids), outcomes)
		}
		if r := p.ls(t, ctx); r.Ready != 0 || r.Claimed != 16 {
			t.Fatalf("after the claims: %+v", r)
		}

		_, stop := p.serve(t, ctx)
		took := p.waitReady(t, ctx, 4, 30*time.Second) // the bound the README states
		t.Logf("%s: pool refilled from 0 to 4 ready in %s (refill interval 300ms, 2 creates at a time)", e.Name, took.Round(10*time.Millisecond))

		t.Run("a member killed from outside is replaced", func(t *testing.T) {
			var victim string
			for _, c := range p.containers(t, ctx) {
				if c.State == "paused" {
					victim = c.ID
					break
				}
			}
			if err := e.API.ContainerUnpause(ctx, victim); err != nil {
				t.Fatal(err)
			}
			if err := e.API.ContainerKill(ctx, victim, "KILL"); err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			for {
				gone := true
				ready := 0
				for _, c := range p.containers(t, ctx) {
					if c.ID == victim {
						gone = false
					}
					if c.State == "paused" {
						ready++
					}
				}
				if gone && ready == 4 {
					t.Logf("%s: killed member removed and replaced in %s", e.Name, time.Since(t0).Round(10*time.Millisecond))
					break
				}
				if time.Since(t0) > 2*time.Minute {
					t.Fatalf("killed member not replaced: gone=%v ready=%d", gone, ready)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})

		t.Run("with --wait an empty pool hands out the member the refiller makes", func(t *testing.T) {
			p.mustRun(t, ctx, "pool", "resize", p.name, "1")
			p.waitReady(t, ctx, 1, time.Minute)
			var wg sync.WaitGroup
			got := make([]claimLine, 2)
			for i := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res := p.run(t, ctx, "create", "--pool", p.name, "--wait", "90s")
					got[i], _ = parseClaim(res.Stderr)
					if res.Code != 0 {
						t.Errorf("create --wait: exit %d\n%s", res.Code, res.Stderr)
					}
				}()
			}
			wg.Wait()
			o := map[string]int{got[0].Outcome: 1}
			o[got[1].Outcome]++
			if o[podbot.ClaimWarm] != 1 || o[podbot.ClaimWaited] != 1 || got[0].Name == got[1].Name {
				t.Fatalf("outcomes %+v; want one warm and one waited", got)
			}
		})
		stop()

		t.Run("a claimed sandbox is an ordinary one", func(t *testing.T) {
			name := claims[0].name
			ps := p.mustRun(t, ctx, "ps", "--json")
			if !strings.Contains(ps.Stdout, `"`+name+`"`) {
				t.Errorf("ps does not list %s", name)
			}
			if out := p.mustRun(t, ctx, "exec", name, "--", "sh", "-c", "echo ok; ls /sys/class/net"); out.Stdout != "ok\nlo\n" {
				t.Errorf("exec in the claimed sandbox: %q (want ok and only lo: network none)", out.Stdout)
			}
			p.mustRun(t, ctx, "rm", "--force", name)
			if _, err := e.API.ContainerInspect(ctx, name); err == nil {
				t.Errorf("rm left %s", name)
			}
		})

		t.Run("pool rm leaves the claimed sandboxes running", func(t *testing.T) {
			p.mustRun(t, ctx, "pool", "rm", p.name)
			running := 0
			for _, c := range p.containers(t, ctx) {
				name := strings.TrimPrefix(c.Names[0], "/")
				if strings.HasPrefix(name, podbot.MemberPrefix) {
					t.Errorf("pool rm left member %s (%s)", name, c.State)
				}
				if c.State == "running" {
					running++
				}
			}
			if running != 17 {
				t.Errorf("%d claimed sandboxes running after pool rm, want 17 (16 + 2 claimed with --wait - 1 removed)", running)
			}
			if res := p.run(t, ctx, "pool", "ls", "--json"); strings.Contains(res.Stdout, p.name) {
				t.Errorf("pool rm left the definition: %s", res.Stdout)
			}
		})
	})
}

// TestPoolClaimedToolSessionLikeCold runs the tools suite's hostile-input
// cases (path confinement, pids limit, read-only root, network none) on a
// session claimed from a pool, and checks that the claimed workspace is
// hydrated, that the claim made no exec (it connects over the member's
// link socket), that the member takes the session's name (a rename that
// lands after the claim returned) and that the CLI's tools call --pool
// reports a warm claim.
func TestPoolClaimedToolSessionLikeCold(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		conn := poolConn(t, ctx, e)
		src := t.TempDir()
		if err := os.WriteFile(filepath.Join(src, "notes.txt"), []byte("alpha\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		name := "lc-" + suite.runID[len(suite.runID)-6:]
		_, spec, cfg, root := libraryPool(t, ctx, e, conn, name, 2, func(c *config.Config) {
			c.Tools.PidsLimit = 64
			c.Tools.AllowedHostRoots = []string{src}
		})
		var outcome podbot.ClaimReport
		var events []string
		since := time.Now().Add(-time.Second)
		s, err := podbot.NewToolSession(ctx, conn, podbot.ToolSessionOptions{
			Config: cfg, SidecarPath: filepath.Join(suite.bin, "podbot-sidecar"), WorkspaceRoot: root,
			Mounts: []podbot.ToolHostMount{{HostPath: src}}, Pool: &spec,
			OnClaim: func(c podbot.ClaimReport) { outcome = c },
			OnEvent: func(ev sandbox.Event) { events = append(events, ev.Kind) },
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
		if outcome.Outcome != podbot.ClaimWarm || s.Info().ContainerName != outcome.Name {
			t.Fatalf("claim %+v, info %+v", outcome, s.Info())
		}
		rf, err := sandbox.Invoke[tools.ReadFileResult](ctx, s, tools.ReadFileTool, tools.ReadFileParams{FilePath: filepath.Base(src) + "/notes.txt"})
		if err != nil || !strings.Contains(rf.Content, "alpha") {
			t.Fatalf("hydrated file in the claimed workspace: %+v, %v", rf, err)
		}
		// The member was made with a link socket; the claim adopts it
		// over that socket, so the engine saw no exec into it.
		if link, ex := s.Info().Link, execEvents(t, ctx, e, s.Info().ContainerID, since); link != sandbox.LinkSocket || len(ex) != 0 {
			t.Errorf("claimed session reaches its sidecar over %q with exec events %v; want the socket and none", link, ex)
		}
		// The session was handed out before its rename landed (its id is
		// podbot's own); the rename lands by itself.
		for t0 := time.Now(); ; time.Sleep(20 * time.Millisecond) {
			in, err := e.API.ContainerInspect(ctx, s.Info().ContainerID)
			if err == nil && strings.TrimPrefix(in.Name, "/") == outcome.Name {
				break
			}
			if time.Since(t0) > 30*time.Second {
				t.Fatalf("the claimed member was not renamed to %s: %s, %v", outcome.Name, in.Name, err)
			}
		}
		checkHostileInputs(t, ctx, s)
		if id, err := shellCall(ctx, s, 0, "id", "-u"); err != nil || id.Stdout != "65534\n" {
			t.Errorf("claimed session runs as %q, %v", id.Stdout, err)
		}
		in, err := e.API.ContainerInspect(ctx, s.Info().ContainerID)
		if err != nil {
			t.Fatal(err)
		}
		if in.HostConfig.PidsLimit == nil || *in.HostConfig.PidsLimit != 64 || !in.HostConfig.ReadonlyRootfs || string(in.HostConfig.NetworkMode) != "none" ||
			in.HostConfig.Memory != 1<<30 || len(in.HostConfig.CapDrop) == 0 {
			t.Errorf("claimed container's limits: pids %v ro %v net %s mem %d capdrop %v", in.HostConfig.PidsLimit, in.HostConfig.ReadonlyRootfs,
				in.HostConfig.NetworkMode, in.HostConfig.Memory, in.HostConfig.CapDrop)
		}
		dir := s.Info().WorkspaceDir
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("Close left the claimed workspace %s: %v", dir, err)
		}

		t.Run("tools call --pool", func(t *testing.T) {
			p := newPoolEnv(t, e, "tc")
			p.mustRun(t, ctx, "pool", "create", p.name, "--size", "1")
			res := p.mustRun(t, ctx, "tools", "call", "shell_execute", "--pool", p.name, "--args", `{"command":["id","-u"]}`)
			c, _ := parseClaim(res.Stderr)
			var sr tools.ShellResult
			decodeJSON(t, res.Stdout, &sr)
			if c.Outcome != podbot.ClaimWarm || sr.Stdout != "65534\n" {
				t.Errorf("claim %+v result %+v", c, sr)
			}
			res = p.mustRun(t, ctx, "tools", "call", "ls", "--pool", p.name, "--args", `{"path":"."}`)
			if c, _ := parseClaim(res.Stderr); c.Outcome != podbot.ClaimCold {
				t.Errorf("second claim from an empty pool: %+v", c)
			}
			if res := p.run(t, ctx, "create", "--pool", p.name); res.Code == 0 || !strings.Contains(res.Stderr, "tools call --pool") {
				t.Errorf("create from a tools pool: exit %d %s", res.Code, res.Stderr)
			}
		})
	})
}

// TestPoolFaults: a missing image during refill fails clearly, backs off
// and shows in pool ls; a refiller killed mid-create leaves nothing a
// claim can get twice, and prune finds the half-made member.
func TestPoolFaults(t *testing.T) {
	t.Parallel() // long, and touches only what it names (see forEachEngine)
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()

		t.Run("missing image", func(t *testing.T) {
			p := newPoolEnv(t, e, "mi")
			p.mustRun(t, ctx, "--image", "localhost/podbot-missing-"+suite.runID+":none", "pool", "create", p.name, "--size", "2", "--no-fill")
			res := p.run(t, ctx, "pool", "resize", p.name, "2")
			if res.Code != 4 || !strings.Contains(res.Stderr, "podbot-missing") {
				t.Errorf("refill with a missing image: exit %d\n%s", res.Code, res.Stderr)
			}
			r := p.ls(t, ctx)
			if r.Failing != 1 || !strings.Contains(r.LastError, "podbot-missing") || r.Ready != 0 {
				t.Errorf("pool ls after the failure: %s", jsonOf(r))
			}
			// Within the backoff the next pass tries no create.
			p.run(t, ctx, "pool", "resize", p.name, "2")
			if r := p.ls(t, ctx); r.Failing != 1 {
				t.Errorf("a pass within the backoff tried again: %s", jsonOf(r))
			}
			res = p.run(t, ctx, "tools", "call", "ls", "--pool", p.name, "--args", `{"path":"."}`)
			if res.Code == 0 || !strings.Contains(res.Stderr, "outcome=cold") || !strings.Contains(res.Stderr, "podbot-missing") {
				t.Errorf("claim from the failing pool: exit %d\n%s", res.Code, res.Stderr)
			}
			if n := len(p.containers(t, ctx)); n != 0 {
				t.Errorf("%d containers left by failed creates", n)
			}
		})

		t.Run("a name in use gives the member back", func(t *testing.T) {
			p := newPoolEnv(t, e, "nu")
			p.mustRun(t, ctx, "pool", "create", p.name, "--size", "2", "--kind", "agent", "--network", "none")
			taken := "pbt-" + suite.runID + "-" + e.Name + "-" + p.name
			p.mustRun(t, ctx, "create", "--pool", p.name, "--name", taken)
			res := p.run(t, ctx, "create", "--pool", p.name, "--name", taken)
			if res.Code != 4 || !strings.Contains(res.Stderr, "already") {
				t.Errorf("claim under a name in use: exit %d\n%s", res.Code, res.Stderr)
			}
			if r := p.ls(t, ctx); r.Ready != 1 || r.Claimed != 1 {
				t.Errorf("the member did not go back to the pool: %s", jsonOf(r))
			}
		})

		t.Run("engine unreachable", func(t *testing.T) {
			p := newPoolEnv(t, e, "eu")
			p.mustRun(t, ctx, "pool", "create", p.name, "--size", "1")
			// The later --engine-socket wins: the engine is gone for this claim.
			res := p.run(t, ctx, "--engine-socket", "unix:///nonexistent-"+suite.runID+".sock", "tools", "call", "ls", "--pool", p.name, "--args", `{"path":"."}`)
			if res.Code != 4 || strings.Contains(res.Stderr, "outcome=") {
				t.Errorf("claim with the engine gone: exit %d\n%s", res.Code, res.Stderr)
			}
			// The member is still there, ready, for the next claim.
			if r := p.ls(t, ctx); r.Ready != 1 {
				t.Errorf("after the failed claim: %s", jsonOf(r))
			}
		})

		t.Run("refiller killed mid-create", func(t *testing.T) {
			p := newPoolEnv(t, e, "kc")
			p.mustRun(t, ctx, "pool", "create", p.name, "--size", "0")
			p.mustRun(t, ctx, "pool", "resize", p.name, "4", "--no-fill")
			cmd, _ := p.serve(t, ctx)
			t0 := time.Now()
			var half string
			for half == "" {
				for _, c := range p.containers(t, ctx) {
					if c.State != "paused" {
						half = strings.TrimPrefix(c.Names[0], "/")
					}
				}
				if time.Since(t0) > time.Minute {
					t.Fatal("the refiller made no member")
				}
				time.Sleep(20 * time.Millisecond)
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			time.Sleep(time.Second)
			// The members left unparked by the kill (the one seen above may
			// have been parked just before the kill landed) must never be
			// handed out; parked ones are ready and go once each.
			halfMade := map[string]bool{}
			for _, c := range p.containers(t, ctx) {
				if c.State != "paused" {
					halfMade[strings.TrimPrefix(c.Names[0], "/")] = true
				}
			}
			t.Logf("%s: refiller killed while making %s; unparked after the kill: %d", e.Name, half, len(halfMade))
			seen := map[string]bool{}
			for range 4 {
				res := p.run(t, ctx, "tools", "call", "ls", "--pool", p.name, "--args", `{"path":"."}`)
				c, _ := parseClaim(res.Stderr)
				if res.Code != 0 || seen[c.Member] && c.Member != "" || halfMade[c.Member] {
					t.Errorf("claim after the kill: exit %d %+v (half-made %v)\n%s", res.Code, c, halfMade, res.Stderr)
				}
				seen[c.Member] = true
			}
			// What is left of the pool is half-made (never paused):
			// prune (dry run: the engines are shared) lists it once it is
			// older than the grace.
			var left []string
			for _, c := range p.containers(t, ctx) {
				if c.State != "paused" {
					left = append(left, strings.TrimPrefix(c.Names[0], "/"))
				}
			}
			if len(left) == 0 {
				t.Logf("%s: the killed refiller left no half-made member (it was killed between creates)", e.Name)
				return
			}
			if wait := 62*time.Second - time.Since(t0); wait > 0 {
				time.Sleep(wait)
			}
			conn := poolConn(t, ctx, e)
			res, err := podbot.Prune(ctx, conn, podbot.PruneOptions{DryRun: true, ToolsWorkspaceRoot: filepath.Join(p.cache, "podbot", "tools")})
			if err != nil {
				t.Fatal(err)
			}
			listed := map[string]bool{}
			for _, c := range res.Containers {
				listed[c.Name] = true
			}
			for _, n := range left {
				if !listed[n] {
					t.Errorf("prune would not remove half-made member %s: %s", n, jsonOf(res.Containers))
				}
			}
			// The refiller's own removal path does it for real.
			b := podbot.NewPoolBackend(conn, podbot.PoolOptions{Config: config.Default(), WorkspaceRoot: filepath.Join(p.cache, "podbot", "tools")})
			ms, _ := b.Members(ctx, p.name)
			for _, m := range ms {
				if m.State == pool.StateStarting {
					if err := b.Remove(ctx, m); err != nil {
						t.Error(err)
					}
					if m.Dir != "" {
						if _, err := os.Stat(m.Dir); !os.IsNotExist(err) {
							t.Errorf("member directory %s left: %v", m.Dir, err)
						}
					}
				}
			}
		})
	})
}

// TestPoolConcurrentToolClaims: a tools pool of 4; 16 tools calls by
// podbot processes, 4 running at once, each claiming from the pool (found
// through the members' host records, no engine list): 4 warm claims of 4
// distinct members, 12 cold, none handed out twice; every session is gone
// with its call, and no member directory is left with a record.
func TestPoolConcurrentToolClaims(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		p := newPoolEnv(t, e, "ct")
		p.mustRun(t, ctx, "pool", "create", p.name, "--size", "4")
		if r := p.ls(t, ctx); r.Ready != 4 {
			t.Fatalf("after pool create: %+v", r)
		}
		var (
			mu     sync.Mutex
			claims []claimLine
			wg     sync.WaitGroup
		)
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 4 {
					res := p.run(t, ctx, "tools", "call", "shell_execute", "--pool", p.name, "--args", `{"command":["id","-u"]}`)
					c, ok := parseClaim(res.Stderr)
					if res.Code != 0 || !ok || !strings.Contains(res.Stdout, "65534") {
						t.Errorf("worker %d: tools call --pool: exit %d, claim reported %v\n%s\n%s", w, res.Code, ok, res.Stdout, res.Stderr)
						return
					}
					mu.Lock()
					claims = append(claims, c)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		outcomes, members := map[string]int{}, map[string]bool{}
		for _, c := range claims {
			outcomes[c.Outcome]++
			if c.Outcome != podbot.ClaimWarm {
				continue
			}
			if members[c.Member] || !strings.HasPrefix(c.Member, podbot.MemberPrefix+p.name+"-") {
				t.Errorf("member %q handed out twice or reported badly", c.Member)
			}
			members[c.Member] = true
		}
		if len(claims) != 16 || outcomes[podbot.ClaimWarm] != 4 || outcomes[podbot.ClaimCold] != 12 {
			t.Fatalf("%d claims, outcomes %v; want 16: 4 warm, 12 cold", len(claims), outcomes)
		}
		// Each session closed when its call returned: nothing of the pool
		// is left in the engine, and no member directory keeps a record.
		if left := p.containers(t, ctx); len(left) != 0 {
			t.Errorf("%d containers left after the calls: %s", len(left), jsonOf(left))
		}
		recs, _ := filepath.Glob(filepath.Join(p.cache, "podbot", "tools", "pool-"+p.name+"-*", sandbox.MemberRecordName))
		if len(recs) != 0 {
			t.Errorf("member records left: %v", recs)
		}
	})
}
