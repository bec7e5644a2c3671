package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

func TestShellExecuteResults(t *testing.T) {
	ws := newTestWorkspace(t)
	ctx := context.Background()
	writeHostFile(t, ws, "sub/keep.txt", "x")
	tests := []struct {
		name   string
		p      ShellParams
		code   int
		stdout string
		stderr string
		cwd    string
	}{
		{name: "echo", p: ShellParams{Command: []string{"echo", "hi there"}}, stdout: "hi there\n", cwd: "/workspace"},
		{name: "failing command is a result", p: ShellParams{Command: []string{"sh", "-c", "echo oops >&2; exit 3"}}, code: 3, stderr: "oops\n", cwd: "/workspace"},
		{name: "no shell expansion", p: ShellParams{Command: []string{"echo", "$HOME", "*"}}, stdout: "$HOME *\n", cwd: "/workspace"},
		{name: "stdin", p: ShellParams{Command: []string{"cat"}, Stdin: "from stdin"}, stdout: "from stdin", cwd: "/workspace"},
		{name: "cwd", p: ShellParams{Command: []string{"ls"}, Cwd: "sub"}, stdout: "keep.txt\n", cwd: "/workspace/sub"},
		{name: "env override", p: ShellParams{Command: []string{"sh", "-c", "echo $GREETING"}, Env: map[string]string{"GREETING": "hello"}}, stdout: "hello\n", cwd: "/workspace"},
		{name: "not found", p: ShellParams{Command: []string{"no-such-program-podbot"}}, code: 127, stderr: "podbot: command not found: no-such-program-podbot\n", cwd: "/workspace"},
		{name: "capture disabled", p: ShellParams{Command: []string{"echo", "hidden"}, CaptureOutput: ptr(false)}, stdout: CaptureDisabled, stderr: CaptureDisabled, cwd: "/workspace"},
		{name: "killed by signal", p: ShellParams{Command: []string{"sh", "-c", "kill -9 $$"}}, code: 137, cwd: "/workspace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ws.ShellExecute(ctx, tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if got.ExitCode != tt.code || got.Stdout != tt.stdout || got.Stderr != tt.stderr || got.Cwd != tt.cwd || got.TimedOut {
				t.Fatalf("got %+v", got)
			}
		})
	}
}

func TestShellExecuteValidation(t *testing.T) {
	ws := newTestWorkspace(t)
	ctx := context.Background()
	tests := []struct {
		name   string
		p      ShellParams
		reason error
	}{
		{"empty command", ShellParams{}, reasonInvalid},
		{"empty program", ShellParams{Command: []string{""}}, reasonInvalid},
		{"5000-byte command", ShellParams{Command: []string{"echo", strings.Repeat("a", 5000)}}, reasonInvalid},
		{"nul in arg", ShellParams{Command: []string{"echo", "a\x00b"}}, reasonInvalid},
		{"non-ASCII env value", ShellParams{Command: []string{"true"}, Env: map[string]string{"NAME": "Zoë"}}, reasonInvalid},
		{"non-ASCII env key", ShellParams{Command: []string{"true"}, Env: map[string]string{"NAMÉ": "x"}}, reasonInvalid},
		{"env key with =", ShellParams{Command: []string{"true"}, Env: map[string]string{"A=B": "x"}}, reasonInvalid},
		{"stdin too long", ShellParams{Command: []string{"cat"}, Stdin: strings.Repeat("x", MaxStdinChars+1)}, reasonInvalid},
		{"cwd dotdot", ShellParams{Command: []string{"true"}, Cwd: ".."}, reasonRefused},
		{"cwd absolute", ShellParams{Command: []string{"true"}, Cwd: "/etc"}, reasonRefused},
		{"cwd missing", ShellParams{Command: []string{"true"}, Cwd: "nope"}, reasonNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ws.ShellExecute(ctx, tt.p)
			wantToolError(t, err, tt.reason)
		})
	}
}

func TestShellTimeoutClamp(t *testing.T) {
	tests := []struct {
		in   *float64
		want float64
	}{
		{nil, 30}, {ptr(0.0), 1}, {ptr(-5.0), 1}, {ptr(7.5), 7.5}, {ptr(1000.0), 120},
	}
	for _, tt := range tests {
		c, err := ShellParams{Command: []string{"true"}, TimeoutSeconds: tt.in}.check()
		if err != nil || c.timeout.Seconds() != tt.want {
			t.Errorf("timeout %v -> %v, %v; want %vs", tt.in, c.timeout, err, tt.want)
		}
	}
}

func TestShellOutputFloodBounded(t *testing.T) {
	ws := newTestWorkspace(t)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := ws.ShellExecute(context.Background(), ShellParams{
		Command:        []string{"sh", "-c", "head -c 1000000000 /dev/zero; head -c 1000000 /dev/zero >&2"},
		TimeoutSeconds: ptr(120.0),
	})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got.TimedOut || got.ExitCode != 0 {
		t.Fatalf("flood did not finish cleanly: exit %d timed out %v", got.ExitCode, got.TimedOut)
	}
	for name, s := range map[string]string{"stdout": got.Stdout, "stderr": got.Stderr} {
		if len(s) > MaxOutputBytes || !strings.HasSuffix(s, TruncatedMarker) {
			t.Errorf("%s: %d bytes, marker %v", name, len(s), strings.HasSuffix(s, TruncatedMarker))
		}
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("allocated %d bytes for a 1 GB flood; output is not bounded", grew)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// gone polls until pid has died: a SIGKILL is delivered asynchronously.
func gone(pid int) bool {
	for range 500 {
		if !alive(pid) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func readPids(t *testing.T, ws *Workspace) []int {
	t.Helper()
	data, _ := readHostFile(t, ws, "pids")
	var pids []int
	for _, f := range strings.Fields(data) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("bad pid %q", f)
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		t.Fatal("the command recorded no child pids")
	}
	return pids
}

func TestShellTimeoutKillsProcessGroup(t *testing.T) {
	ws := newTestWorkspace(t)
	// Two children: one ignores SIGTERM (needs the SIGKILL), one does not.
	script := `trap "" TERM; sleep 300 & echo $! >> pids; (trap - TERM; sleep 300) & echo $! >> pids; sleep 300`
	got, err := ws.ShellExecute(context.Background(), ShellParams{Command: []string{"sh", "-c", script}, TimeoutSeconds: ptr(1.0)})
	if err != nil {
		t.Fatal(err)
	}
	if !got.TimedOut || got.ExitCode != TimeoutExitCode {
		t.Fatalf("got exit %d timed_out %v; want %d true", got.ExitCode, got.TimedOut, TimeoutExitCode)
	}
	for _, pid := range readPids(t, ws) {
		if !gone(pid) {
			t.Errorf("child %d outlived the timeout", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func TestShellBackgroundChildKilledAfterExit(t *testing.T) {
	ws := newTestWorkspace(t)
	got, err := ws.ShellExecute(context.Background(), ShellParams{Command: []string{"sh", "-c", "sleep 300 & echo $! > pids; echo started"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.TimedOut || got.ExitCode != 0 || got.Stdout != "started\n" {
		t.Fatalf("got %+v", got)
	}
	for _, pid := range readPids(t, ws) {
		if !gone(pid) {
			t.Errorf("background child %d outlived its command", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func TestShellChangedFiles(t *testing.T) {
	ws := newTestWorkspace(t)
	writeHostFile(t, ws, "old.txt", "old")
	writeHostFile(t, ws, "mod.txt", "a")
	writeHostFile(t, ws, "same.txt", "same")
	got, err := ws.ShellExecute(context.Background(), ShellParams{Command: []string{"sh", "-c", "rm old.txt; echo more >> mod.txt; mkdir d; echo n > d/new.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	for _, c := range got.ChangedFiles {
		list = append(list, c.Path+"="+c.Change)
	}
	if s := strings.Join(list, ","); s != "d=created,d/new.txt=created,mod.txt=modified,old.txt=removed" || got.ChangedFilesTruncated {
		t.Fatalf("changed_files = %s (truncated %v)", s, got.ChangedFilesTruncated)
	}
}

func TestShellConcurrent(t *testing.T) {
	ws := newTestWorkspace(t)
	const calls = 64
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := fmt.Sprintf("call-%d", i)
			got, err := ws.ShellExecute(context.Background(), ShellParams{
				Command: []string{"sh", "-c", "echo $ID; echo $ID >&2; cat; exit $CODE"},
				Env:     map[string]string{"ID": want, "CODE": strconv.Itoa(i % 7)},
				Stdin:   want,
			})
			switch {
			case err != nil:
				errs <- err
			case got.Stdout != want+"\n"+want || got.Stderr != want+"\n" || got.ExitCode != i%7:
				errs <- fmt.Errorf("call %d: got %+v", i, got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestShellCancelledContext(t *testing.T) {
	ws := newTestWorkspace(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ws.ShellExecute(ctx, ShellParams{Command: []string{"sleep", "5"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestCappedBuffer(t *testing.T) {
	tests := []struct {
		writes []string
		limit  int
		want   string
	}{
		{[]string{"abc"}, 32, "abc"},
		{[]string{strings.Repeat("x", 40)}, 32, strings.Repeat("x", 32-len(TruncatedMarker)-1) + "\n" + TruncatedMarker},
		{[]string{"ab", strings.Repeat("é", 20)}, 32, "ab" + strings.Repeat("é", 9) + "\n" + TruncatedMarker},
	}
	for _, tt := range tests {
		b := cappedBuffer{limit: tt.limit}
		for _, w := range tt.writes {
			if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		if got := b.String(); got != tt.want || len(got) > tt.limit {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}
