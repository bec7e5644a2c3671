package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/tools"
)

func TestContainerLazyCreationAndBookkeeping(t *testing.T) {
	s, rt, rec := newFakeContainer(t, nil)
	if rt.starts != 0 || s.Info().ContainerID != "" {
		t.Fatal("a container was created before the first call")
	}
	if got := shell(t, s, "echo", "hi"); got.Stdout != "hi\n" || got.ExitCode != 0 {
		t.Fatalf("echo = %+v", got)
	}
	shell(t, s, "true")
	in := s.Info()
	if rt.starts != 1 || rt.attaches != 1 {
		t.Fatalf("starts=%d attaches=%d, want one container and one stream for two calls", rt.starts, rt.attaches)
	}
	if in.ContainerName == "" || in.StartedAt.IsZero() || in.LastUsedAt.Before(in.StartedAt) || in.Backend != BackendContainer {
		t.Fatalf("info = %+v", in)
	}
	want := []string{EventCreated, EventStarted, EventToolCall, EventToolCall}
	if got := rec.kinds(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("events %v, want %v", got, want)
	}
	call := rec.last(EventToolCall)
	if call.Tool != tools.ShellExecuteTool || call.ExitCode == nil || *call.ExitCode != 0 || !call.Success || call.Container != in.ContainerName {
		t.Fatalf("tool_call event = %+v", call)
	}
}

func TestContainerConcurrentCallsShareOneStream(t *testing.T) {
	s, rt, _ := newFakeContainer(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := Invoke[tools.ShellResult](context.Background(), s, tools.ShellExecuteTool,
				tools.ShellParams{Command: []string{"echo", fmt.Sprint(i)}})
			if err != nil {
				errs <- err
				return
			}
			if res.Stdout != fmt.Sprintf("%d\n", i) {
				errs <- fmt.Errorf("call %d got %q", i, res.Stdout)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if rt.starts != 1 || rt.attaches != 1 {
		t.Fatalf("starts=%d attaches=%d, want 1 and 1", rt.starts, rt.attaches)
	}
}

func TestContainerRecreatedAfterKill(t *testing.T) {
	s, rt, rec := newFakeContainer(t, nil)
	mustCall(t, s, tools.WriteFileTool, `{"file_path":"keep.txt","content":"intact"}`)
	first := s.Info().ContainerID
	rt.kill(first)
	out := mustCall(t, s, tools.ReadFileTool, `{"file_path":"keep.txt"}`)
	if !strings.Contains(string(out), "intact") {
		t.Fatalf("workspace lost after recreation: %s", out)
	}
	in := s.Info()
	if in.ContainerID == first || in.Recreations != 1 || rec.count(EventRecreatedAfterFailure) != 1 {
		t.Fatalf("info %+v, events %v", in, rec.kinds())
	}
	if rt.live() != 1 {
		t.Fatalf("%d containers left, want only the new one", rt.live())
	}
}

func TestContainerReconnectsWhenOnlyTheStreamEnded(t *testing.T) {
	s, rt, rec := newFakeContainer(t, nil)
	shell(t, s, "true")
	id := s.Info().ContainerID
	rt.breakStream(id)
	shell(t, s, "true")
	if s.Info().ContainerID != id || rec.count(EventReconnected) != 1 || rec.count(EventRecreatedAfterFailure) != 0 {
		t.Fatalf("info %+v, events %v", s.Info(), rec.kinds())
	}
}

func TestContainerIdleCleanup(t *testing.T) {
	s, rt, rec := newFakeContainer(t, func(o *ContainerOptions) { o.IdleTimeout = 50 * time.Millisecond })
	mustCall(t, s, tools.WriteFileTool, `{"file_path":"a.txt","content":"x"}`)
	rec.waitFor(t, EventIdleCleanup, 1)
	if rt.live() != 0 || s.Info().ContainerID != "" {
		t.Fatalf("container not removed after idle: %+v", s.Info())
	}
	mustCall(t, s, tools.ReadFileTool, `{"file_path":"a.txt"}`)
	if rt.starts != 2 || rec.count(EventRecreatedAfterFailure) != 0 {
		t.Fatalf("starts=%d events %v", rt.starts, rec.kinds())
	}
}

func TestContainerUptimeLimit(t *testing.T) {
	s, rt, rec := newFakeContainer(t, func(o *ContainerOptions) { o.MaxUptime = 50 * time.Millisecond })
	shell(t, s, "true")
	rec.waitFor(t, EventUptimeLimit, 1)
	expired := rec.last(EventUptimeLimit).Container
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, c := range rt.containers {
		if c.name == expired {
			t.Fatalf("container %s not removed at the uptime limit", expired)
		}
	}
}

func TestContainerCloseRemovesEverything(t *testing.T) {
	s, rt, rec := newFakeContainer(t, nil)
	shell(t, s, "true")
	dir := s.Info().WorkspaceDir
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rt.live() != 0 {
		t.Error("container left after Close")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("workspace %s left after Close: %v", dir, err)
	}
	if _, err := s.Call(context.Background(), tools.LsTool, nil); err == nil {
		t.Error("call after Close succeeded")
	}
	if rec.count(EventClosed) != 1 {
		t.Errorf("events %v", rec.kinds())
	}
}

func TestContainerClone(t *testing.T) {
	s, _, _ := newFakeContainer(t, nil)
	mustCall(t, s, tools.WriteFileTool, `{"file_path":"a.txt","content":"one"}`)
	c, err := s.Clone(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	mustCall(t, c, tools.WriteFileTool, `{"file_path":"b.txt","content":"two"}`)
	if out := mustCall(t, c, tools.ReadFileTool, `{"file_path":"a.txt"}`); !strings.Contains(string(out), "one") {
		t.Errorf("clone lacks the original's file: %s", out)
	}
	if _, err := s.Call(context.Background(), tools.ReadFileTool, []byte(`{"file_path":"b.txt"}`)); err == nil {
		t.Error("the clone's write reached the original")
	}
	if c.Info().ID == s.Info().ID || c.Info().WorkspaceDir == s.Info().WorkspaceDir {
		t.Error("clone shares identity or workspace")
	}
}

func TestContainerToolErrors(t *testing.T) {
	s, _, rec := newFakeContainer(t, nil)
	tests := []struct{ name, args, want string }{
		{tools.ReadFileTool, `{"file_path":"../etc/passwd"}`, ".."},
		{tools.ReadFileTool, `{"file_path":"/etc/passwd"}`, "absolute"},
		{tools.ShellExecuteTool, `{"command":[]}`, "empty"},
		{"no_such_tool", `{}`, "no such tool"},
		{tools.PodmanShellTool, `{"action":"explode"}`, "action"},
	}
	for _, tt := range tests {
		_, err := s.Call(context.Background(), tt.name, []byte(tt.args))
		if !errors.Is(err, tools.ErrInvalidInput) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %s: err %v, want a tool error mentioning %q", tt.name, tt.args, err, tt.want)
		}
	}
	if e := rec.last(EventToolCall); e.Success || e.Error == "" {
		t.Errorf("failed call event = %+v", e)
	}
}

func TestContainerEventsRedactAndReportExitCodes(t *testing.T) {
	r := creds.NewRedactor("s3cr3t-token")
	s, _, rec := newFakeContainer(t, func(o *ContainerOptions) { o.Redactor = r })
	res, err := Invoke[tools.ShellResult](context.Background(), s, tools.ShellExecuteTool,
		tools.ShellParams{Command: []string{"sh", "-c", "exit 3"}, Env: map[string]string{"TOKEN": "s3cr3t-token"}})
	if err != nil || res.ExitCode != 3 {
		t.Fatalf("res %+v err %v", res, err)
	}
	e := rec.last(EventToolCall)
	if strings.Contains(string(e.Params), "s3cr3t") || !strings.Contains(string(e.Params), creds.Mask) {
		t.Errorf("params not redacted: %s", e.Params)
	}
	if e.Success || e.ExitCode == nil || *e.ExitCode != 3 {
		t.Errorf("event = %+v", e)
	}
}

func TestContainerPodmanShell(t *testing.T) {
	s, rt, rec := newFakeContainer(t, nil)
	var start tools.PodmanShellResult
	start, err := Invoke[tools.PodmanShellResult](context.Background(), s, tools.PodmanShellTool, tools.PodmanShellParams{Action: "start"})
	if err != nil || start.ContainerName == "" || start.Stdout != nil {
		t.Fatalf("start = %+v, %v", start, err)
	}
	ex, err := Invoke[tools.PodmanShellResult](context.Background(), s, tools.PodmanShellTool,
		tools.PodmanShellParams{Action: "exec", Command: "echo a; echo b >&2; exit 4"})
	if err != nil || ex.Stdout == nil || *ex.Stdout != "a\n" || *ex.Stderr != "b\n" || *ex.ExitCode != 4 {
		t.Fatalf("exec = %+v, %v", ex, err)
	}
	stop, err := Invoke[tools.PodmanShellResult](context.Background(), s, tools.PodmanShellTool, tools.PodmanShellParams{Action: "stop"})
	if err != nil || stop.ContainerName != start.ContainerName || rt.live() != 0 || rec.count(EventStopped) != 1 {
		t.Fatalf("stop = %+v, %v, live %d", stop, err, rt.live())
	}
}

func TestContainerHydratesBeforeFirstStart(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "in.txt"), []byte("from host"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, _, _ := newFakeContainer(t, func(o *ContainerOptions) {
		o.Mounts = []HostMount{{HostPath: src, MountPath: "src"}}
		o.AllowedHostRoots = []string{src}
	})
	if out := mustCall(t, s, tools.ReadFileTool, `{"file_path":"src/in.txt"}`); !strings.Contains(string(out), "from host") {
		t.Fatalf("hydrated file missing: %s", out)
	}
}

func TestContainerDefaultShellTimeout(t *testing.T) {
	s, _, rec := newFakeContainer(t, func(o *ContainerOptions) { o.ShellTimeout = 7 * time.Second })
	shell(t, s, "true")
	if p := string(rec.last(EventToolCall).Params); !strings.Contains(p, `"timeout_seconds":7`) {
		t.Fatalf("default timeout not applied: %s", p)
	}
}

// A call whose context ends returns at once, and the sidecar is told to
// stop it: its command does not run on.
func TestContainerCancelledCallStopsItsCommand(t *testing.T) {
	s, _, _ := newFakeContainer(t, nil)
	shell(t, s, "true") // container and stream up
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, tools.ShellExecuteTool, []byte(`{"command":["sh","-c","echo $$ > pid; exec sleep 60"]}`))
		done <- err
	}()
	pidFile := filepath.Join(s.WorkspaceDir(), "pid")
	var pid int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil {
			if _, err := fmt.Sscan(string(b), &pid); err == nil && pid > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled call did not return")
	}
	// The sidecar reaps what it kills (here in-process), so a stopped
	// command's pid disappears.
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("command %d still runs after its call was cancelled", pid)
		}
	}
	if got := shell(t, s, "echo", "after"); got.Stdout != "after\n" {
		t.Fatalf("the session did not survive a cancelled call: %+v", got)
	}
}
