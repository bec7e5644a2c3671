//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/pool"
	"github.com/podbot/podbot/sandbox"
)

// privateEngine is an engine API this test may restart without touching
// the shared engines' other users: for Podman a second `podman system
// service` on a socket of its own (the same storage; the containers run
// under conmon, not under the service, so restarting it stops none of
// them), for Docker a dockerd of its own (its own data-root, exec-root,
// containerd and socket; a default bridge of its own, no iptables rules), loaded with the
// tools image.
type privateEngine struct {
	t    *testing.T
	name string
	dir  string
	sock string
	args []string
	cmd  *exec.Cmd
	pgid int
	e    engineUnderTest
	// bridge is a private dockerd's own default bridge interface.
	bridge string
}

// newPrivateEngine starts a private engine of e's kind and returns it with
// its engineUnderTest (the same name, the private endpoint).
func newPrivateEngine(t *testing.T, ctx context.Context, e engineUnderTest) *privateEngine {
	t.Helper()
	// A short directory: unix socket paths are bounded, and containerd
	// puts its own sockets under dockerd's exec-root.
	dir, err := os.MkdirTemp("", "pbe")
	if err != nil {
		t.Fatal(err)
	}
	p := &privateEngine{t: t, name: e.Name, dir: dir, sock: filepath.Join(dir, "api.sock")}
	switch e.Name {
	case "podman":
		p.args = []string{"podman", "system", "service", "--time=0", "unix://" + p.sock}
	case "docker":
		conf := filepath.Join(dir, "daemon.json")
		if err := os.WriteFile(conf, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		// A bridge of its own: with --bridge none dockerd deletes docker0 at
		// start, the shared dockerd's default bridge.
		p.bridge = "pbe" + strings.TrimPrefix(filepath.Base(dir), "pbe")
		if len(p.bridge) > 15 {
			p.bridge = p.bridge[:15]
		}
		for _, args := range [][]string{{"link", "add", p.bridge, "type", "bridge"}, {"addr", "add", "10.214.254.1/24", "dev", p.bridge}} {
			if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
				t.Fatalf("ip %v: %v\n%s", args, err, out)
			}
		}
		p.args = []string{"dockerd", "--config-file", conf, "--host", "unix://" + p.sock,
			"--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "x"),
			"--pidfile", filepath.Join(dir, "dockerd.pid"), "--bridge", p.bridge, "--iptables=false", "--ip6tables=false",
			"--ip-masq=false", "--cgroup-parent", "podbot-e2e-" + filepath.Base(dir)}
	default:
		t.Fatalf("no private engine for %s", e.Name)
	}
	t.Cleanup(p.cleanup)
	p.start(ctx)
	if e.Name == "docker" {
		p.loadImage(ctx, e, toolsImage)
	}
	return p
}

// start launches the engine and waits until it answers.
func (p *privateEngine) start(ctx context.Context) {
	p.t.Helper()
	os.Remove(p.sock)
	log, err := os.OpenFile(filepath.Join(p.dir, "engine.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		p.t.Fatal(err)
	}
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	log.Close()
	p.cmd = cmd
	if p.pgid == 0 {
		p.pgid = cmd.Process.Pid
	}
	api, err := client.NewClientWithOpts(client.WithHost("unix://"+p.sock), client.WithAPIVersionNegotiation())
	if err != nil {
		p.t.Fatal(err)
	}
	for t0 := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		if _, err := api.Ping(ctx); err == nil {
			break
		}
		if time.Since(t0) > time.Minute {
			p.t.Fatalf("private %s did not answer within a minute:\n%s", p.name, p.log())
		}
	}
	p.e = engineUnderTest{Name: p.name, Endpoint: "unix://" + p.sock, API: api}
}

// stop ends the engine process: SIGKILL (a crash) or SIGTERM (a clean
// shutdown), and waits for it.
func (p *privateEngine) stop(sig syscall.Signal) {
	if p.cmd == nil {
		return
	}
	if p.name == "docker" && sig == syscall.SIGKILL {
		// A crash of the engine: dockerd and the containerd it runs (the
		// shims, and so the containers, live on, as they would).
		syscall.Kill(-p.pgid, sig)
	} else {
		p.cmd.Process.Signal(sig)
	}
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(45 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
	p.cmd = nil
	if p.name == "docker" && sig == syscall.SIGKILL {
		// dockerd reuses a containerd whose pid file names a live process:
		// wait until the killed one is gone (reaped), or its successor
		// waits for a socket that never comes.
		b, _ := os.ReadFile(filepath.Join(p.dir, "x", "containerd", "containerd.pid"))
		for t0 := time.Now(); time.Since(t0) < 30*time.Second; time.Sleep(100 * time.Millisecond) {
			st, err := os.ReadFile("/proc/" + strings.TrimSpace(string(b)) + "/stat")
			if len(b) == 0 || err != nil || strings.Contains(string(st), ") Z ") {
				break
			}
		}
		os.Remove(filepath.Join(p.dir, "x", "containerd", "containerd.pid"))
	}
}

// log is the engine's output, for failure messages.
func (p *privateEngine) log() string {
	b, _ := os.ReadFile(filepath.Join(p.dir, "engine.log"))
	return lastLines(string(b), 20)
}

// loadImage copies image from the shared engine into the private one.
func (p *privateEngine) loadImage(ctx context.Context, from engineUnderTest, image string) {
	p.t.Helper()
	rc, err := from.API.ImageSave(ctx, []string{image})
	if err != nil {
		p.t.Fatal(err)
	}
	defer rc.Close()
	res, err := p.e.API.ImageLoad(ctx, rc)
	if err != nil {
		p.t.Fatalf("load %s into the private dockerd: %v", image, err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
}

// cleanup removes the private engine's containers (a dockerd of its own
// holds only this test's), stops it and removes its directory.
func (p *privateEngine) cleanup() {
	if p.name == "docker" && p.cmd != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if cs, err := p.e.API.ContainerList(ctx, container.ListOptions{All: true}); err == nil {
			for _, c := range cs {
				p.e.API.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
			}
		}
	}
	p.stop(syscall.SIGTERM)
	if p.pgid > 0 {
		syscall.Kill(-p.pgid, syscall.SIGKILL) // a containerd a crashed dockerd left
	}
	if p.name == "docker" {
		p.killLeftovers()
		// dockerd leaves its containerd's mounts under the exec-root and
		// data-root; unmount before removing.
		exec.Command("sh", "-c", fmt.Sprintf("grep -o ' %s[^ ]*' /proc/self/mounts | sort -r | xargs -r -n1 umount -l", p.dir)).Run()
	}
	if p.bridge != "" {
		exec.Command("ip", "link", "delete", p.bridge).Run()
	}
	os.RemoveAll(p.dir)
}

// killLeftovers ends what a private dockerd that could not clean up left:
// the processes of its containers (in its own cgroup parent, thawed first
// so that a paused one can die) and the containerd shims serving them
// (named by the private exec-root in their arguments).
func (p *privateEngine) killLeftovers() {
	parent := "podbot-e2e-" + filepath.Base(p.dir)
	cgs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup/freezer", parent, "*", "freezer.state"))
	for _, f := range cgs {
		os.WriteFile(f, []byte("THAWED"), 0o644)
	}
	procs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup/*", parent, "*", "cgroup.procs"))
	for _, f := range procs {
		b, _ := os.ReadFile(f)
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), "containerd-shim") && strings.Contains(string(b), p.dir+"/") {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	time.Sleep(500 * time.Millisecond)
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup/*", parent))
	for _, d := range dirs {
		subs, _ := filepath.Glob(filepath.Join(d, "*"))
		for _, s := range subs {
			if fi, err := os.Stat(s); err == nil && fi.IsDir() {
				os.Remove(s)
			}
		}
		os.Remove(d)
	}
}

// hasAll reports whether s contains every one of subs.
func hasAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// TestPoolEngineRestart: the engine crashes (SIGKILL) under a tools pool
// whose refiller runs, and comes back. While it is down a claim fails
// clearly (exit 4, no claim reported) and hands nothing out; once it is
// back, claims work again, warm where the members survived and cold
// otherwise, no member twice; the refiller brings the pool back to size,
// and no member the crash killed is left, in the engine or as a directory.
// Measured: the paused members survive on both engines (Podman's run under
// conmon, not the API service; a crashed dockerd's containerd shims keep
// them, and the dockerd started again adopts them).
//
// The engine restarted is a private one (newPrivateEngine), never the
// shared engines other tests use.
func TestPoolEngineRestart(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		pe := newPrivateEngine(t, ctx, e)
		p := newPoolEnv(t, pe.e, "er")
		p.mustRun(t, ctx, "pool", "create", p.name, "--size", "2")
		_, stopServe := p.serve(t, ctx)
		p.waitReady(t, ctx, 2, time.Minute)

		pe.stop(syscall.SIGKILL)
		res := p.run(t, ctx, "tools", "call", "ls", "--pool", p.name, "--args", `{"path":"."}`)
		if res.Code != 4 || strings.Contains(res.Stderr, "outcome=") {
			t.Errorf("claim with the engine down: exit %d\n%s", res.Code, res.Stderr)
		}
		time.Sleep(time.Second) // the refiller meets the dead engine too
		pe.start(ctx)
		p.e = pe.e

		seen := map[string]bool{}
		outcomes := map[string]int{}
		for range 3 {
			res := p.run(t, ctx, "tools", "call", "shell_execute", "--pool", p.name, "--args", `{"command":["id","-u"]}`)
			c, ok := parseClaim(res.Stderr)
			if res.Code != 0 || !ok || !strings.Contains(res.Stdout, "65534") {
				t.Fatalf("claim after the restart: exit %d\n%s\n%s\nengine:\n%s", res.Code, res.Stdout, res.Stderr, pe.log())
			}
			if c.Member != "" && seen[c.Member] {
				t.Errorf("member %s handed out twice", c.Member)
			}
			seen[c.Member] = true
			outcomes[c.Outcome]++
		}
		t.Logf("%s: claims after the engine restart: %v", e.Name, outcomes)
		if e.Name == "podman" && outcomes[podbot.ClaimWarm] < 2 {
			t.Errorf("Podman's members survive a restart of its API service; want 2 warm claims, got %v", outcomes)
		}
		took := p.waitReady(t, ctx, 2, 2*time.Minute)
		t.Logf("%s: pool back to 2 ready %s after the claims", e.Name, took.Round(10*time.Millisecond))
		stopServe()
		for _, c := range p.containers(t, ctx) {
			if c.State != "paused" {
				t.Errorf("after the refill: %s is %s", c.Names, c.State)
			}
		}
		// Every member directory left belongs to a ready member (the
		// killed ones' went with them); only ready ones keep a record.
		dirs, _ := filepath.Glob(filepath.Join(p.cache, "podbot", "tools", sandbox.MemberDirPrefix+p.name+"-*"))
		recs, _ := filepath.Glob(filepath.Join(p.cache, "podbot", "tools", sandbox.MemberDirPrefix+p.name+"-*", sandbox.MemberRecordName))
		if len(dirs) != 2 || len(recs) != 2 {
			t.Errorf("member directories %v, records %v; want the 2 ready members'", dirs, recs)
		}
	})
}

// TestPoolFullDisk: the host directory tools members live in (the tools
// workspace root) is on a full filesystem (a tmpfs of 256 KiB filled to
// the last byte). The refill fails with the kernel's own error, backs off
// (a pass within the backoff tries no create) and shows the error in pool
// ls; no container and no member directory is left half-made; a claim from
// the empty pool falls back cold, and that session, which cannot write its
// socket key either, says so and answers over an exec stream. With a page
// or two free, a member gets as far as a running container before a write
// fails, and is removed whole. Once space is freed, the next pass after
// the backoff fills the pool.
func TestPoolFullDisk(t *testing.T) {
	t.Parallel() // long, and touches only what it names (see forEachEngine)
	if os.Geteuid() != 0 {
		t.Fatal("this test mounts a tmpfs: run the e2e suite as root, as make test-e2e does on these hosts")
	}
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		mnt, err := os.MkdirTemp("", "pbfull")
		if err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
			t.Fatalf("mount a tmpfs: %v: %s", err, out)
		}
		t.Cleanup(func() {
			exec.Command("umount", "-l", mnt).Run()
			os.RemoveAll(mnt)
		})
		root := filepath.Join(mnt, "podbot", "tools")
		if err := os.MkdirAll(root, 0o700); err != nil {
			t.Fatal(err)
		}
		filler := filepath.Join(mnt, "filler")
		f, err := os.Create(filler)
		if err != nil {
			t.Fatal(err)
		}
		block := make([]byte, 4096)
		for {
			if _, err := f.Write(block); err != nil {
				break // ENOSPC: the filesystem is full
			}
		}
		f.Close()
		p := newPoolEnv(t, e, "fd")
		p.env = append(p.env, "XDG_CACHE_HOME="+mnt) // the last value wins
		p.cache = mnt

		res := p.run(t, ctx, "pool", "create", p.name, "--size", "2")
		if res.Code == 0 || !strings.Contains(res.Stderr, "no space left on device") {
			t.Errorf("pool create on a full disk: exit %d\n%s", res.Code, res.Stderr)
		}
		r := p.ls(t, ctx)
		if r.Failing != 1 || r.Ready != 0 || !strings.Contains(r.LastError, "no space left on device") {
			t.Errorf("pool ls after the failed refill: %s", jsonOf(r))
		}
		p.run(t, ctx, "pool", "resize", p.name, "2")
		if r := p.ls(t, ctx); r.Failing != 1 {
			t.Errorf("a pass within the backoff tried again: %s", jsonOf(r))
		}
		if left := p.containers(t, ctx); len(left) != 0 {
			t.Errorf("failed creates left %d containers: %s", len(left), jsonOf(left))
		}
		if dirs, _ := filepath.Glob(filepath.Join(root, sandbox.MemberDirPrefix+p.name+"-*")); len(dirs) != 0 {
			t.Errorf("failed creates left member directories %v", dirs)
		}
		res = p.run(t, ctx, "tools", "call", "ls", "--pool", p.name, "--args", `{"path":"."}`)
		// The cold session cannot write its socket key either: it says so
		// and reaches its sidecar over an exec stream instead.
		if res.Code != 0 || !hasAll(res.Stderr, "outcome=cold", "no space left on device", "uses an exec stream") {
			t.Errorf("claim from the pool on a full disk: exit %d\n%s", res.Code, res.Stderr)
		}
		if left := p.containers(t, ctx); len(left) != 0 {
			t.Errorf("the cold claim left %d containers", len(left))
		}

		// Room for a page or two: the member's directory fits, its socket
		// key does not (it falls back to an exec stream, as a session
		// does), its container is made and started, and the member record
		// cannot be written: the half-made member is removed with its
		// container and directory, and the pool backs off further.
		for pages := 1; pages <= 2; pages++ {
			fi, _ := os.Stat(filler)
			if err := os.Truncate(filler, fi.Size()-4096); err != nil {
				t.Fatal(err)
			}
			st, err := p.store(t).GetStatus(p.name)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Until(st.RetryAt) + 100*time.Millisecond)
			res := p.run(t, ctx, "pool", "resize", p.name, "2")
			if res.Code == 0 || !strings.Contains(res.Stderr, "no space left on device") {
				t.Errorf("%d free pages: exit %d\n%s", pages, res.Code, res.Stderr)
			}
			r := p.ls(t, ctx)
			if left := p.containers(t, ctx); len(left) != r.Ready {
				t.Errorf("%d free pages: %d containers for %d ready members: %s", pages, len(left), r.Ready, jsonOf(left))
			}
			if dirs, _ := filepath.Glob(filepath.Join(root, sandbox.MemberDirPrefix+p.name+"-*")); len(dirs) != r.Ready {
				t.Errorf("%d free pages: member directories %v for %d ready members", pages, dirs, r.Ready)
			}
		}
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		st, err := p.store(t).GetStatus(p.name)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(st.RetryAt) + 100*time.Millisecond)
		p.mustRun(t, ctx, "pool", "resize", p.name, "2")
		if r := p.ls(t, ctx); r.Ready != 2 || r.Failing != 0 {
			t.Errorf("after space was freed: %s", jsonOf(r))
		}
	})
}

// store opens this environment's pool store (the state directory podbot
// uses with XDG_STATE_HOME set to p.state).
func (p *poolEnv) store(t testing.TB) *pool.Store {
	t.Helper()
	st, err := pool.OpenStore(filepath.Join(p.state, "podbot", "pools"))
	if err != nil {
		t.Fatal(err)
	}
	return st
}
