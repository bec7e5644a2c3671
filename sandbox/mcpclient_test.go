package sandbox

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/podbot/podbot/tools"
)

// recordingPipe is a pipe that keeps a copy of every line written to it.
type recordingPipe struct {
	*io.PipeWriter
	mu    sync.Mutex
	lines []string
}

func (r *recordingPipe) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.lines = append(r.lines, strings.Split(strings.TrimRight(string(p), "\n"), "\n")...)
	r.mu.Unlock()
	return r.PipeWriter.Write(p)
}

func (r *recordingPipe) recorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// TestSidecarServeCommandProcs checks the GOMAXPROCS the sidecar is given
// for each CPU limit: the limit rounded up, the tools default (1 CPU) for
// zero, and none (Go's own choice) without a limit.
func TestSidecarServeCommandProcs(t *testing.T) {
	for _, tt := range []struct {
		nanoCPUs int64
		want     string // the --gomaxprocs value, "" for no flag
	}{
		{0, "1"}, {250_000_000, "1"}, {1_000_000_000, "1"}, {1_000_000_001, "2"},
		{2_000_000_000, "2"}, {16_500_000_000, "17"}, {1 << 62, "1024"}, {-1, ""},
	} {
		cmd := sidecarServeCommand(tt.nanoCPUs, true)
		got := ""
		if i := slices.Index(cmd, "--gomaxprocs"); i >= 0 && i+1 < len(cmd) {
			got = cmd[i+1]
		}
		if got != tt.want {
			t.Errorf("CPU limit %d: --gomaxprocs %q, want %q (command %q)", tt.nanoCPUs, got, tt.want, cmd)
		}
		if !slices.Contains(cmd, "--batch") {
			t.Errorf("CPU limit %d: the sidecar is started without --batch: %q", tt.nanoCPUs, cmd)
		}
	}
	if cmd := sidecarServeCommand(0, false); slices.Contains(cmd, "--batch") {
		t.Errorf("batch scheduling off: the sidecar is started with --batch: %q", cmd)
	}
}

// TestSidecarLinkIsLean checks what the host link puts on the wire: the
// stateful protocol (no per-request _meta triple), and results read from
// the JSON text of a server that sends nothing else, which is what the
// sidecar is started to be.
func TestSidecarLinkIsLean(t *testing.T) {
	if cmd := sidecarServeCommand(0, true); !slices.Contains(cmd, "--structured=false") {
		t.Errorf("the sidecar is started with %q: it would send every result twice", cmd)
	}
	ctx := context.Background()
	ws, err := tools.NewWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if _, err := ws.WriteFile(ctx, tools.WriteFileParams{FilePath: "a.txt", Content: "hello\n"}); err != nil {
		t.Fatal(err)
	}
	toServerR, toServerW := io.Pipe()
	fromServerR, fromServerW := io.Pipe()
	sent := &recordingPipe{PipeWriter: toServerW}
	replies := &recordingPipe{PipeWriter: fromServerW}
	srv := tools.NewMCPServer(ws, "test", tools.TextResults())
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx, &tools.LineTransport{Reader: toServerR, Writer: replies}) }()
	st := &stream{stdout: fromServerR, stdin: sent, done: make(chan struct{}), stderr: newTailBuffer(stderrTail),
		closeFn: func() error { toServerW.Close(); fromServerR.Close(); return nil }}
	cs, err := connectSidecar(ctx, st, "test", "c1")
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != sidecarProtocol {
		t.Errorf("negotiated protocol %q, want %q", got, sidecarProtocol)
	}
	out, err := callSidecar(ctx, cs, tools.ReadFileTool, json.RawMessage(`{"file_path":"a.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	var res tools.ReadFileResult
	if err := json.Unmarshal(out, &res); err != nil || !strings.Contains(res.Content, "hello") {
		t.Fatalf("read_file result %s: %v", out, err)
	}
	cs.Close()
	<-served

	var call, reply string
	for _, l := range sent.recorded() {
		if strings.Contains(l, `"tools/call"`) {
			call = l
		}
	}
	for _, l := range replies.recorded() {
		if strings.Contains(l, `"content"`) {
			reply = l
		}
	}
	if call == "" || strings.Contains(call, "_meta") {
		t.Errorf("tools/call request %q: want one without a _meta triple", call)
	}
	if reply == "" || strings.Contains(reply, "structuredContent") {
		t.Errorf("tools/call reply %q: want the JSON text alone", reply)
	}
}
