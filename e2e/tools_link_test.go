//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/sandbox"
	"github.com/podbot/podbot/tools"
)

// linkedSession opens a container tool session with the given sidecar
// link mode and runs one call, so its container runs.
func linkedSession(t testing.TB, ctx context.Context, e engineUnderTest, link string) (*sandbox.Container, time.Time) {
	t.Helper()
	since := time.Now().Add(-time.Second)
	s, _ := toolSessionWith(t, ctx, e, nil, func(o *podbot.ToolSessionOptions) { o.SidecarLink = link })
	if _, err := s.Call(ctx, tools.LsTool, json.RawMessage(`{"path":"."}`)); err != nil {
		t.Fatal(err)
	}
	return s.(*sandbox.Container), since
}

// execEvents lists the engine's exec events for container id since since.
func execEvents(t testing.TB, ctx context.Context, e engineUnderTest, id string, since time.Time) []string {
	t.Helper()
	ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	msgs, errs := e.API.Events(ectx, events.ListOptions{
		Since:   since.Format(time.RFC3339Nano),
		Until:   time.Now().Add(time.Second).Format(time.RFC3339Nano),
		Filters: filters.NewArgs(filters.Arg("container", id)),
	})
	var out []string
	for {
		select {
		case m := <-msgs:
			if strings.HasPrefix(string(m.Action), "exec") {
				out = append(out, string(m.Action))
			}
		case err := <-errs:
			if err != nil && ectx.Err() == nil && !strings.Contains(err.Error(), "EOF") {
				t.Fatalf("events: %v", err)
			}
			return out
		}
	}
}

// TestToolsLinkConnectsWithoutExec: a tool session reaches its sidecar
// over the link socket, on its first call and on every reconnect, and the
// engine records no exec for its container at all; the same calls over
// the exec link do show exec events (the check is not blind).
func TestToolsLinkConnectsWithoutExec(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx := context.Background()
		s, since := linkedSession(t, ctx, e, sandbox.SidecarLinkAuto)
		for range 3 {
			s.Detach()
			if _, err := s.Call(ctx, tools.ReadFileTool, json.RawMessage(`{"file_path":"missing.txt"}`)); err == nil {
				t.Fatal("read_file of a missing file succeeded")
			}
		}
		in := s.Info()
		if in.Link != sandbox.LinkSocket {
			t.Fatalf("link = %q, want %q", in.Link, sandbox.LinkSocket)
		}
		if ev := execEvents(t, ctx, e, in.ContainerID, since); len(ev) != 0 {
			t.Fatalf("the socket session's container saw exec events %v", ev)
		}
		x, xsince := linkedSession(t, ctx, e, sandbox.SidecarLinkExec)
		x.Detach()
		if _, err := x.Call(ctx, tools.LsTool, json.RawMessage(`{"path":"."}`)); err != nil {
			t.Fatal(err)
		}
		xin := x.Info()
		if xin.Link != sandbox.LinkExec {
			t.Fatalf("exec session link = %q", xin.Link)
		}
		if ev := execEvents(t, ctx, e, xin.ContainerID, xsince); len(ev) == 0 {
			t.Fatal("no exec events seen for the exec session: the check cannot see execs on this engine")
		}
	})
}

// TestToolsLinkSandboxCannotRedirectHost: the sandbox replaces its
// socket with a symlink to a host socket (and later a FIFO); podbot never
// connects to the host socket, falls back to an exec stream, and the
// session works on. The sandbox sees only its own link directory, without
// the key, and its own socket refuses a peer without the key.
func TestToolsLinkSandboxCannotRedirectHost(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx := context.Background()
		s, _ := linkedSession(t, ctx, e, sandbox.SidecarLinkAuto)
		other, _ := linkedSession(t, ctx, e, sandbox.SidecarLinkAuto)
		hostSock := filepath.Join(t.TempDir(), "host.sock")
		l, err := net.Listen("unix", hostSock)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		connected := make(chan struct{}, 1)
		go func() {
			if c, err := l.Accept(); err == nil {
				connected <- struct{}{}
				c.Close()
			}
		}()
		// What the sandbox can see and do.
		probe := `import os, socket
d = "/run/podbot-sidecar"
print(sorted(os.listdir(d)))
found = []
for root, dirs, files in os.walk("/", onerror=lambda e: None):
    if root.startswith("/proc") or root.startswith("/sys"):
        dirs[:] = []
        continue
    found += [os.path.join(root, f) for f in files if f == "tools.sock" or f == "sidecar.key"]
print(sorted(found))
c = socket.socket(socket.AF_UNIX)
c.connect(d + "/tools.sock")
c.sendall(b"podbotL1" + b"\0" * 32)
c.recv(64)
c.sendall(b"\0" * 32)
print("rest", c.recv(64))
`
		res, err := shellCall(ctx, s, 60, "python3", "-c", probe)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("probe: %+v %v", res, err)
		}
		lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
		if len(lines) != 3 || lines[0] != "['tools.sock']" || lines[1] != "['/run/podbot-sidecar/tools.sock']" || lines[2] != "rest b''" {
			t.Fatalf("the sandbox saw %q; want only its own socket, no key, and a refusal without the key", lines)
		}
		// Replace the socket with a symlink to the host socket.
		res, err = shellCall(ctx, s, 30, "sh", "-c", "rm -f /run/podbot-sidecar/tools.sock && ln -s "+hostSock+" /run/podbot-sidecar/tools.sock && ls -l /run/podbot-sidecar")
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("plant: %+v %v", res, err)
		}
		s.Detach()
		if _, err := s.Call(ctx, tools.LsTool, json.RawMessage(`{"path":"."}`)); err != nil {
			t.Fatalf("the session did not recover over an exec: %v", err)
		}
		if in := s.Info(); in.Link != sandbox.LinkExec {
			t.Fatalf("link = %q after the symlink, want the exec fallback", in.Link)
		}
		select {
		case <-connected:
			t.Fatal("podbot connected to the host socket the sandbox's symlink pointed at")
		case <-time.After(200 * time.Millisecond):
		}
		// The other sandbox's link is untouched.
		other.Detach()
		if _, err := other.Call(ctx, tools.LsTool, json.RawMessage(`{"path":"."}`)); err != nil || other.Info().Link != sandbox.LinkSocket {
			t.Fatalf("the other session: link %q, %v", other.Info().Link, err)
		}
	})
}

// toolSessionWith is toolSession with a hook on the session options.
func toolSessionWith(t testing.TB, ctx context.Context, e engineUnderTest, mutate func(*config.Config), opt func(*podbot.ToolSessionOptions)) (podbot.ToolSession, string) {
	t.Helper()
	ep, err := engine.ParseEndpoint(e.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := engine.Connect(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	cfg := config.Default()
	cfg.Tools.Image = toolsImage
	if mutate != nil {
		mutate(&cfg)
	}
	opts := podbot.ToolSessionOptions{Config: cfg, SidecarPath: filepath.Join(suite.bin, "podbot-sidecar"), WorkspaceRoot: t.TempDir()}
	if opt != nil {
		opt(&opts)
	}
	s, err := podbot.NewToolSession(ctx, conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Close(cctx); err != nil {
			t.Errorf("close: %v", err)
		}
		if _, err := os.Stat(filepath.Join(opts.WorkspaceRoot, "session-"+s.Info().ID)); !os.IsNotExist(err) {
			t.Errorf("the session directory (with its link directory) is still there: %v", err)
		}
	})
	return s, opts.WorkspaceRoot
}

// sidecarFDs lists, from the host, the descriptor targets of the
// podbot-sidecar serve processes of container id (children of its init).
func sidecarFDs(t *testing.T, ctx context.Context, e engineUnderTest, id string) string {
	t.Helper()
	info, err := e.API.ContainerInspect(ctx, id)
	if err != nil || info.State == nil || info.State.Pid == 0 {
		t.Fatalf("inspect %s: %v", id, err)
	}
	pid := strconv.Itoa(info.State.Pid)
	// A child is listed under the thread that started it.
	tasks, err := filepath.Glob("/proc/" + pid + "/task/*/children")
	if err != nil || len(tasks) == 0 {
		t.Fatalf("no tasks of %s: %v", pid, err)
	}
	var children []string
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		children = append(children, strings.Fields(string(b))...)
	}
	var out []string
	for _, c := range children {
		cmdline, _ := os.ReadFile("/proc/" + c + "/cmdline")
		if !strings.Contains(string(cmdline), "serve") {
			continue
		}
		ents, err := os.ReadDir("/proc/" + c + "/fd")
		if err != nil {
			t.Fatal(err)
		}
		for _, ent := range ents {
			if target, err := os.Readlink("/proc/" + c + "/fd/" + ent.Name()); err == nil {
				out = append(out, target)
			}
		}
	}
	return strings.Join(out, " ")
}

// TestToolsLinkHandOver: a running sandbox released by one session and
// adopted by another (as a pool claim does) answers the adopter's first
// read_file over its socket, with no new container and no exec.
func TestToolsLinkHandOver(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx := context.Background()
		a, _ := linkedSession(t, ctx, e, sandbox.SidecarLinkAuto)
		if _, err := a.Call(ctx, tools.WriteFileTool, json.RawMessage(`{"file_path":"f.txt","content":"handed over\n"}`)); err != nil {
			t.Fatal(err)
		}
		r, ok := a.Release()
		if !ok {
			t.Fatal("nothing to release")
		}
		since := time.Now()
		ep, err := engine.ParseEndpoint(e.Endpoint)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := engine.Connect(ctx, ep)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		cfg := config.Default()
		cfg.Tools.Image = toolsImage
		t0 := time.Now()
		b, err := podbot.AdoptToolSession(ctx, conn, podbot.ToolSessionOptions{Config: cfg, SidecarPath: filepath.Join(suite.bin, "podbot-sidecar")}, r)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := b.Close(ctx); err != nil {
				t.Error(err)
			}
			if _, err := os.Stat(r.SessionDir); !os.IsNotExist(err) {
				t.Errorf("the session directory survived the adopter's Close: %v", err)
			}
		}()
		out, err := b.Call(ctx, tools.ReadFileTool, json.RawMessage(`{"file_path":"f.txt"}`))
		took := time.Since(t0)
		if err != nil || !strings.Contains(string(out), "handed over") {
			t.Fatalf("read_file = %s, %v", out, err)
		}
		in := b.Info()
		if in.Link != sandbox.LinkSocket || in.ContainerID != r.ContainerID {
			t.Fatalf("adopted session: %+v", in)
		}
		if ev := execEvents(t, ctx, e, r.ContainerID, since); len(ev) != 0 {
			t.Fatalf("the hand-over made exec events %v", ev)
		}
		t.Logf("%s: adopt and first read_file in %v", e.Name, took)
	})
}

// TestToolsLinkRemovedWithContainer: podbot rm of a released tool
// container removes its link directory and key, not the workspace.
func TestToolsLinkRemovedWithContainer(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx := context.Background()
		a, _ := linkedSession(t, ctx, e, sandbox.SidecarLinkAuto)
		r, ok := a.Release()
		if !ok {
			t.Fatal("nothing to release")
		}
		link := filepath.Join(r.SessionDir, "sidecar")
		if _, err := os.Stat(link); err != nil {
			t.Fatal(err)
		}
		res := runPodbot(t, ctx, e, "rm", "--force", r.ContainerName)
		if res.Code != 0 {
			t.Fatalf("podbot rm: %d\n%s", res.Code, res.Stderr)
		}
		for _, gone := range []string{link, filepath.Join(r.SessionDir, "sidecar.key")} {
			if _, err := os.Lstat(gone); !os.IsNotExist(err) {
				t.Errorf("%s survived podbot rm: %v", gone, err)
			}
		}
		if _, err := os.Stat(filepath.Join(r.SessionDir, "workspace")); err != nil {
			t.Errorf("the workspace went too: %v", err)
		}
		os.RemoveAll(r.SessionDir)
	})
}
