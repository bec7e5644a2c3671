//go:build linux

package tools

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestRunSupervisor drives the event-loop runner directly, with the pidfd
// and with the thread that stands in for it where pidfd_open is refused.
func TestRunSupervisor(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 12<<10) // 192 KiB: more than a pipe holds
	tests := []struct {
		name      string
		spec      runSpec
		noCapture bool
		code      int
		stdout    string
		stderr    string // for a start failure (126), a prefix
		timeout   bool
	}{
		{name: "output", spec: runSpec{argv: []string{"sh", "-c", "echo out; echo err >&2; exit 5"}}, code: 5, stdout: "out\n", stderr: "err\n"},
		{name: "large stdin echoed back", spec: runSpec{argv: []string{"cat"}, stdin: big, limit: len(big)}, stdout: big},
		{name: "stdin not read", spec: runSpec{argv: []string{"true"}, stdin: big}},
		{name: "output capped", spec: runSpec{argv: []string{"cat"}, stdin: big, limit: 64}, stdout: big[:64-len(TruncatedMarker)-1] + "\n" + TruncatedMarker},
		{name: "stdout closed early", spec: runSpec{argv: []string{"sh", "-c", "echo a; exec >&-; sleep 0.2; echo b >&2"}}, stdout: "a\n", stderr: "b\n"},
		{name: "no capture", spec: runSpec{argv: []string{"echo", "x"}}, noCapture: true},
		{name: "timeout", spec: runSpec{argv: []string{"sleep", "30"}, timeout: 300 * time.Millisecond}, code: TimeoutExitCode, timeout: true},
		{name: "not executable", spec: runSpec{argv: []string{"/dev/null"}}, code: 126, stderr: "podbot: cannot run null: "},
	}
	for _, waitThread := range []bool{false, true} {
		for _, tt := range tests {
			name := tt.name
			if waitThread {
				name += "/wait thread"
			}
			t.Run(name, func(t *testing.T) {
				ws := newTestWorkspace(t)
				spec := tt.spec
				spec.dir, spec.waitThread = ws.dir, waitThread
				if spec.timeout == 0 {
					spec.timeout = 10 * time.Second
				}
				if spec.limit == 0 {
					spec.limit = MaxOutputBytes
				}
				spec.capture = !tt.noCapture
				out, err := ws.run(context.Background(), spec)
				if err != nil {
					t.Fatal(err)
				}
				stderrOK := out.stderr == tt.stderr
				if tt.code == 126 { // the rest is the system's own error text
					stderrOK = strings.HasPrefix(out.stderr, tt.stderr)
				}
				if out.exitCode != tt.code || out.timedOut != tt.timeout || out.stdout != tt.stdout || !stderrOK {
					t.Fatalf("got exit %d timed out %v stdout %.80q stderr %.200q", out.exitCode, out.timedOut, out.stdout, out.stderr)
				}
			})
		}
		t.Run("cancel", func(t *testing.T) {
			ws := newTestWorkspace(t)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			start := time.Now()
			_, err := ws.run(ctx, runSpec{argv: []string{"sleep", "30"}, dir: ws.dir, timeout: time.Minute, capture: true, limit: 64, waitThread: waitThread})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("cancellation took %v", d)
			}
		})
	}
}
