package tools

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

func requirePython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed; evaluate_python needs it")
	}
}

func TestEvaluatePython(t *testing.T) {
	requirePython(t)
	ws := newTestWorkspace(t)
	ctx := context.Background()
	writeHostFile(t, ws, "in.txt", "21\n")

	res, err := ws.EvaluatePython(ctx, EvalParams{
		Code:   "n = int(read_text('in.txt'))\nprint(n * 2)\nwrite_text('out/answer.txt', str(n * 2))\nwith open(writes['raw.txt'], 'w') as f:\n    f.write('raw')",
		Reads:  []string{"in.txt"},
		Writes: []string{"out/answer.txt", "raw.txt", "unused.txt"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Stdout != "42\n" || strings.Join(res.Writes, ",") != "out/answer.txt,raw.txt" {
		t.Fatalf("got %+v", res)
	}
	if got, _ := readHostFile(t, ws, "out/answer.txt"); got != "42" {
		t.Fatalf("answer.txt = %q", got)
	}
	if _, ok := readHostFile(t, ws, "unused.txt"); ok {
		t.Fatal("a declared but unwritten file was created")
	}
}

func TestEvaluatePythonFailureWritesNothing(t *testing.T) {
	requirePython(t)
	ws := newTestWorkspace(t)
	res, err := ws.EvaluatePython(context.Background(), EvalParams{
		Code:   "write_text('staged.txt', 'should not land')\nraise RuntimeError('boom')",
		Writes: []string{"staged.txt"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, "RuntimeError: boom") || len(res.Writes) != 0 {
		t.Fatalf("got %+v", res)
	}
	if !strings.Contains(res.Stderr, `File "<code>", line 2`) {
		t.Errorf("traceback does not point at the caller's code: %q", res.Stderr)
	}
	if _, ok := readHostFile(t, ws, "staged.txt"); ok {
		t.Fatal("a failed script's staged write was applied")
	}
}

func TestEvaluatePythonOutputCapped(t *testing.T) {
	requirePython(t)
	ws := newTestWorkspace(t)
	res, err := ws.EvaluatePython(context.Background(), EvalParams{Code: "print('é' * 100000)"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len([]rune(res.Stdout)); n > MaxPythonOutputChars || !strings.HasSuffix(res.Stdout, TruncatedMarker) {
		t.Fatalf("stdout is %d characters, marker %v", n, strings.HasSuffix(res.Stdout, TruncatedMarker))
	}
}

func TestEvaluatePythonValidation(t *testing.T) {
	tests := []struct {
		name   string
		p      EvalParams
		reason error
	}{
		{"empty code", EvalParams{Code: "  "}, reasonInvalid},
		{"code too long", EvalParams{Code: strings.Repeat("x", MaxCodeChars+1)}, reasonInvalid},
		{"duplicate write", EvalParams{Code: "pass", Writes: []string{"a.txt", "./a.txt"}}, reasonInvalid},
		{"duplicate read", EvalParams{Code: "pass", Reads: []string{"a.txt", "a.txt"}}, reasonInvalid},
		{"read and write same", EvalParams{Code: "pass", Reads: []string{"a.txt"}, Writes: []string{"a.txt"}}, reasonInvalid},
		{"write inside read dir", EvalParams{Code: "pass", Reads: []string{"d"}, Writes: []string{"d/x.txt"}}, reasonInvalid},
		{"write escapes", EvalParams{Code: "pass", Writes: []string{"../x"}}, reasonRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantToolError(t, tt.p.Validate(), tt.reason) })
	}
}
