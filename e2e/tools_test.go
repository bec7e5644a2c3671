//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/sandbox"
	"github.com/podbot/podbot/tools"
)

// toolsImage is the locally built sandbox image (python3 inside); no
// registry is reachable here, so the default python:3.12-bookworm is not used.
const toolsImage = "localhost/podbot-sandbox:latest"

// toolsBackends are the backends every MCP inspector test runs against.
type toolsBackend struct {
	name   string
	engine *engineUnderTest // nil for the unsafe local backend
}

func toolsBackends() []toolsBackend {
	out := []toolsBackend{{name: "local"}}
	for i := range suite.engines {
		out = append(out, toolsBackend{name: suite.engines[i].Name, engine: &suite.engines[i]})
	}
	return out
}

// inspector runs the MCP inspector CLI against `podbot tools serve`.
func inspector(t *testing.T, ctx context.Context, b toolsBackend, cfgTOML string, mount string, method ...string) result {
	t.Helper()
	insp := os.Getenv("PODBOT_E2E_INSPECTOR")
	node := os.Getenv("PODBOT_E2E_NODE")
	if insp == "" || node == "" {
		t.Fatal("PODBOT_E2E_INSPECTOR / PODBOT_E2E_NODE not set: eval \"$(scripts/peers.sh env)\" first")
	}
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte(cfgTOML), 0o600); err != nil {
		t.Fatal(err)
	}
	// The inspector starts the server with a minimal environment, so the
	// config file is named by flag.
	serve := []string{filepath.Join(suite.bin, "podbot"), "--config", cfg}
	if b.engine != nil {
		serve = append(serve, "--engine-socket", b.engine.Endpoint, "tools", "serve")
	} else {
		serve = append(serve, "tools", "serve", "--backend", "local")
	}
	if mount != "" {
		serve = append(serve, "--mount", mount)
	}
	args := append([]string{insp, "--cli"}, method...)
	args = append(append(args, "--"), serve...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Env = append(os.Environ(), "PODBOT_CONFIG_PATH="+cfg)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	return result{Code: exitStatus(t, cmd.Run(), method), Stdout: out.String(), Stderr: errOut.String()}
}

func TestToolsInspectorListsAndCallsEveryTool(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "notes.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "old.txt"), []byte("bye\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("[tools]\nimage = %q\nallowed_host_roots = [%q]\n", toolsImage, src)
	mount := src + ":proj"
	for _, b := range toolsBackends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			res := inspector(t, ctx, b, cfg, "", "--method", "tools/list")
			if res.Code != 0 {
				t.Fatalf("tools/list: exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
			}
			var list struct {
				Tools []struct{ Name string } `json:"tools"`
			}
			decodeJSON(t, res.Stdout, &list)
			want := podbot.ToolSpecs(podbot.ToolBackendContainer)
			if b.engine == nil {
				want = podbot.ToolSpecs(podbot.ToolBackendUnsafeLocal)
			}
			if len(list.Tools) != len(want) {
				t.Fatalf("tools/list gave %d tools, want %d: %s", len(list.Tools), len(want), res.Stdout)
			}
			calls := everyToolCalls(b.engine != nil)
			for _, c := range calls {
				method := []string{"--method", "tools/call", "--tool-name", c.tool}
				for _, a := range c.args {
					method = append(method, "--tool-arg", a)
				}
				res := inspector(t, ctx, b, cfg, mount, method...)
				if res.Code != 0 || !strings.Contains(res.Stdout, c.want) {
					t.Errorf("tools/call %s %v: exit %d, want %q in\n%s\nstderr: %s", c.tool, c.args, res.Code, c.want, res.Stdout, res.Stderr)
				}
			}
			// A refused call is a tool error (the inspector exits 5).
			res = inspector(t, ctx, b, cfg, "", "--method", "tools/call", "--tool-name", tools.ReadFileTool, "--tool-arg", "file_path=../etc/passwd")
			if res.Code == 0 || !strings.Contains(res.Stdout+res.Stderr, "..") {
				t.Errorf("refused call: exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
			}
		})
	}
}

// everyToolCall is one call of the every-tool case table: the tool, its
// arguments as the MCP inspector takes them (key=value, the value JSON
// when it parses as JSON) and a string the result must contain. The
// workspace holds proj/notes.txt ("alpha\nbeta\n") and proj/old.txt.
type everyToolCall struct {
	tool string
	args []string
	want string
}

// everyToolCalls is the table of calls that exercises every tool, with
// podman_shell for a container backend.
func everyToolCalls(podmanShell bool) []everyToolCall {
	calls := []everyToolCall{
		{tools.ShellExecuteTool, []string{`command=["echo","hi"]`}, `hi\n`},
		{tools.LsTool, []string{"path=proj"}, "notes.txt"},
		{tools.ReadFileTool, []string{"file_path=proj/notes.txt"}, "beta"},
		{tools.WriteFileTool, []string{"file_path=new.txt", "content=fresh"}, "new.txt"},
		{tools.EditFileTool, []string{"file_path=proj/notes.txt", "old_string=beta", "new_string=gamma"}, "notes.txt"},
		{tools.GlobTool, []string{"pattern=**/*.txt"}, "proj/old.txt"},
		{tools.GrepTool, []string{"pattern=alp"}, "alpha"},
		{tools.RmTool, []string{"path=proj/old.txt"}, "old.txt"},
		{tools.EvaluatePythonTool, []string{"code=print(6*7)"}, "42"},
	}
	if podmanShell {
		calls = append(calls, everyToolCall{tools.PodmanShellTool, []string{"action=exec", "command=echo $((1+2)) | tr 3 X"}, `X\n`})
	}
	return calls
}

// jsonArgs turns an everyToolCall's inspector arguments into a JSON object.
func (c everyToolCall) jsonArgs(t testing.TB) json.RawMessage {
	t.Helper()
	m := map[string]json.RawMessage{}
	for _, a := range c.args {
		k, v, _ := strings.Cut(a, "=")
		if json.Valid([]byte(v)) {
			m[k] = json.RawMessage(v)
			continue
		}
		enc, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		m[k] = enc
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// toolSession opens a container tool session through the library.
func toolSession(t testing.TB, ctx context.Context, e engineUnderTest, mutate func(*config.Config), onEvent func(sandbox.Event)) (podbot.ToolSession, *engine.Conn) {
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
	s, err := podbot.NewToolSession(ctx, conn, podbot.ToolSessionOptions{
		Config: cfg, SidecarPath: filepath.Join(suite.bin, "podbot-sidecar"),
		WorkspaceRoot: t.TempDir(), OnEvent: onEvent,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Close(cctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s, conn
}

func shellCall(ctx context.Context, s podbot.ToolSession, timeout float64, argv ...string) (tools.ShellResult, error) {
	p := tools.ShellParams{Command: argv}
	if timeout > 0 {
		p.TimeoutSeconds = &timeout
	}
	return sandbox.Invoke[tools.ShellResult](ctx, s, tools.ShellExecuteTool, p)
}

func TestToolsHostileInputsInContainer(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		s, _ := toolSession(t, ctx, e, func(c *config.Config) { c.Tools.PidsLimit = 64 }, nil)
		checkHostileInputs(t, ctx, s)
	})
}

// checkHostileInputs runs the hostile-input cases against session s (a
// cold one or one claimed from a pool), whose pids limit is 64, on an
// engine: no network interface but lo.
func checkHostileInputs(t *testing.T, ctx context.Context, s podbot.ToolSession) {
	checkHostileInputsWith(t, ctx, s, hostileChecks{forkBomb: true, network: checkOnlyLoopback})
}

// hostileChecks adapts the hostile-input cases to a backend.
type hostileChecks struct {
	// forkBomb runs the fork-bomb case: only where a pids limit holds it.
	forkBomb bool
	// pidsLimited, when set, proves that a pids limit holds the session's
	// sandbox before the fork bomb runs, and fails the case (without
	// forking) when it cannot.
	pidsLimited func(t *testing.T, ctx context.Context, s podbot.ToolSession)
	// network checks that the session's sandbox has no network.
	network func(t *testing.T, ctx context.Context, s podbot.ToolSession)
}

// checkOnlyLoopback checks that the sandbox has no interface but lo.
func checkOnlyLoopback(t *testing.T, ctx context.Context, s podbot.ToolSession) {
	res, err := shellCall(ctx, s, 0, "ls", "/sys/class/net")
	if err != nil || res.Stdout != "lo\n" {
		t.Errorf("network interfaces: %+v, %v (want only lo)", res, err)
	}
}

// checkHostileInputsWith runs the hostile-input cases against session s.
func checkHostileInputsWith(t *testing.T, ctx context.Context, s podbot.ToolSession, hc hostileChecks) {
	t.Run("fork bomb is contained and the session survives", func(t *testing.T) {
		if !hc.forkBomb {
			t.Skip("no pids limit holds a fork bomb on this backend")
		}
		if hc.pidsLimited != nil {
			hc.pidsLimited(t, ctx, s)
		}
		res, err := shellCall(ctx, s, 5, "sh", "-c", `f() { f | f & }; f; sleep 10`)
		if err != nil {
			t.Fatalf("fork bomb call: %v", err)
		}
		if res.ExitCode == 0 {
			t.Errorf("fork bomb reported success: %+v", res)
		}
		after, err := shellCall(ctx, s, 0, "echo", "alive")
		if err != nil || after.Stdout != "alive\n" {
			t.Fatalf("session did not survive the fork bomb: %+v, %v", after, err)
		}
	})
	t.Run("symlinks to /etc and to host paths are refused", func(t *testing.T) {
		info := s.Info()
		for _, target := range []string{"/etc", info.WorkspaceDir, "/"} {
			name := "link" + fmt.Sprint(len(target))
			if _, err := shellCall(ctx, s, 0, "ln", "-s", target, name); err != nil {
				t.Fatal(err)
			}
			_, err := s.Call(ctx, tools.ReadFileTool, json.RawMessage(fmt.Sprintf(`{"file_path":"%s/passwd"}`, name)))
			if err == nil || !strings.Contains(err.Error(), "outside") && !strings.Contains(err.Error(), "not") {
				t.Errorf("read through a symlink to %s: %v", target, err)
			}
		}
	})
	t.Run("a FIFO the agent made answers at once instead of blocking", func(t *testing.T) {
		if res, err := shellCall(ctx, s, 0, "mkfifo", "trap"); err != nil || res.ExitCode != 0 {
			t.Fatalf("mkfifo: %+v, %v", res, err)
		}
		for _, call := range []struct {
			tool string
			args string
		}{
			{tools.ReadFileTool, `{"file_path":"trap"}`},
			{tools.EditFileTool, `{"file_path":"trap","old_string":"a","new_string":"b"}`},
		} {
			cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
			_, err := s.Call(cctx, call.tool, json.RawMessage(call.args))
			ccancel()
			if err == nil || !strings.Contains(err.Error(), "fifo") {
				t.Errorf("%s on a FIFO: %v, want a refusal naming the fifo", call.tool, err)
			}
		}
		if after, err := shellCall(ctx, s, 0, "echo", "alive"); err != nil || after.Stdout != "alive\n" {
			t.Fatalf("session after the FIFO: %+v, %v", after, err)
		}
	})
	t.Run("root filesystem is read-only and the network is off", func(t *testing.T) {
		res, err := shellCall(ctx, s, 0, "touch", "/etc/x")
		if err != nil || res.ExitCode == 0 || !strings.Contains(res.Stderr, "Read-only file system") {
			t.Errorf("read-only root: %+v, %v", res, err)
		}
		hc.network(t, ctx, s)
	})
}

// TestToolsChangedFilesInContainer checks changed_files in a real sandbox:
// the sidecar follows the workspace with inotify (allowed by the engine's
// seccomp profile, as the sandbox user) and lists what a command did.
func TestToolsChangedFilesInContainer(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		s, _ := toolSession(t, ctx, e, nil, nil)
		checkChangedFiles(t, ctx, s)
		// The sidecar serving the socket is not dumpable: its descriptors
		// are looked at from the host.
		if fds := sidecarFDs(t, ctx, e, s.Info().ContainerID); !strings.Contains(fds, "inotify") {
			t.Errorf("the sidecar holds no inotify descriptor (changed_files fell back to snapshots): %q", fds)
		}
	})
}

// checkChangedFiles checks the changed_files of a command in session s.
func checkChangedFiles(t *testing.T, ctx context.Context, s podbot.ToolSession) {
	t.Helper()
	if _, err := shellCall(ctx, s, 0, "sh", "-c", "mkdir -p old/sub && echo 1 > old/sub/f && echo 2 > edit"); err != nil {
		t.Fatal(err)
	}
	res, err := shellCall(ctx, s, 0, "sh", "-c", "mkdir -p a/b && echo x > a/b/f && echo more >> edit && rm -r old")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range res.ChangedFiles {
		got = append(got, c.Change+" "+c.Path)
	}
	want := []string{"created a", "created a/b", "created a/b/f", "modified edit", "removed old", "removed old/sub", "removed old/sub/f"}
	if !slices.Equal(got, want) || res.ChangedFilesTruncated {
		t.Errorf("changed_files = %q (truncated %v), want %q", got, res.ChangedFilesTruncated, want)
	}
}

func TestToolsConcurrentShellCalls(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		created := &eventCounter{kind: sandbox.EventCreated}
		s, _ := toolSession(t, ctx, e, nil, created.add)
		checkConcurrentShellCalls(t, ctx, s, created)
	})
}

// eventCounter counts a session's events of one kind.
type eventCounter struct {
	kind string
	mu   sync.Mutex
	n    int
}

func (c *eventCounter) add(ev sandbox.Event) {
	if ev.Kind == c.kind {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
}

func (c *eventCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// checkConcurrentShellCalls makes 64 concurrent calls in session s, whose
// created events created counts: all answer, in one sandbox.
func checkConcurrentShellCalls(t *testing.T, ctx context.Context, s podbot.ToolSession, created *eventCounter) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := shellCall(ctx, s, 0, "echo", fmt.Sprint(i))
			if err != nil {
				errs <- err
			} else if res.Stdout != fmt.Sprintf("%d\n", i) || res.ExitCode != 0 {
				errs <- fmt.Errorf("call %d: %+v", i, res)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := created.count(); n != 1 {
		t.Errorf("%d sandboxes created for 64 calls, want 1", n)
	}
}

func TestToolsRecreatedAfterKill(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		var mu sync.Mutex
		var kinds []string
		s, _ := toolSession(t, ctx, e, nil, func(ev sandbox.Event) {
			mu.Lock()
			kinds = append(kinds, ev.Kind)
			mu.Unlock()
		})
		if _, err := s.Call(ctx, tools.WriteFileTool, json.RawMessage(`{"file_path":"keep.txt","content":"intact"}`)); err != nil {
			t.Fatal(err)
		}
		first := s.Info().ContainerID
		if err := e.API.ContainerKill(ctx, first, "KILL"); err != nil {
			t.Fatalf("kill: %v", err)
		}
		out, err := s.Call(ctx, tools.ReadFileTool, json.RawMessage(`{"file_path":"keep.txt"}`))
		if err != nil || !strings.Contains(string(out), "intact") {
			t.Fatalf("call after kill: %s, %v", out, err)
		}
		if s.Info().ContainerID == first {
			t.Error("the killed container is still the session's")
		}
		mu.Lock()
		defer mu.Unlock()
		if !strings.Contains(strings.Join(kinds, ","), sandbox.EventRecreatedAfterFailure) {
			t.Errorf("no recreated_after_failure event: %v", kinds)
		}
		if _, err := e.API.ContainerInspect(ctx, first); err == nil {
			t.Errorf("the killed container %s was not removed", first)
		}
	})
}

func TestToolsCLICall(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := podbotCmd(t, ctx, e, fmt.Sprintf("[tools]\nimage = %q\n", toolsImage),
			"tools", "call", "shell_execute", "--args", `{"command":["id","-u"]}`)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("tools call: %v", err)
		}
		var res tools.ShellResult
		decodeJSON(t, string(out), &res)
		if res.Stdout != "65534\n" {
			t.Errorf("tools run as %q, want 65534", res.Stdout)
		}
	})
}
