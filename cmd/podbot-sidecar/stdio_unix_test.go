//go:build unix

package main

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/podbot/podbot/tools"
)

// blockingPipe returns a pipe whose read end is in blocking mode, as a
// process's inherited stdin is.
func blockingPipe(t testing.TB) (r, w *os.File) {
	t.Helper()
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(fds[0]), "pipe-r"), os.NewFile(uintptr(fds[1]), "pipe-w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

func TestPollable(t *testing.T) {
	r, w := blockingPipe(t)
	if err := r.SetReadDeadline(time.Now()); !errors.Is(err, os.ErrNoDeadline) {
		t.Fatalf("a blocking pipe should not take deadlines, got %v", err)
	}
	pr, polled := pollable(r)
	if !polled {
		t.Fatal("a pipe should be polled")
	}
	// pr shares r's descriptor. Close it here, at the test's end, rather
	// than leave it to pr's finalizer: that would close the number again at
	// some later GC, when another test may have been given it.
	t.Cleanup(func() { pr.Close() })
	if err := pr.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("pollable pipe takes no deadline: %v", err)
	}
	if _, err := w.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err := pr.Read(buf)
	if err != nil || string(buf[:n]) != "ping\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}

	f, err := os.CreateTemp(t.TempDir(), "regular")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, polled := pollable(f); got != f || polled {
		t.Error("a regular file must come back unchanged")
	}
}

// BenchmarkServeStdin times read_file round trips to the sidecar's MCP
// server reading a blocking pipe (the baseline) and the same pipe made
// pollable, alternating, and reports the p50s and their ratio. Run it with
// -cpu 1 to see a one-CPU sandbox.
func BenchmarkServeStdin(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(dir+"/kib.txt", []byte(strings.Repeat("0123456789abcde\n", 64)), 0o644); err != nil {
		b.Fatal(err)
	}
	ws, err := tools.NewWorkspace(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	connect := func(poll bool) *mcp.ClientSession {
		inR, inW := blockingPipe(b)
		outR, outW := blockingPipe(b)
		var in *os.File = inR
		if poll {
			in, _ = pollable(inR)
		}
		ctx, cancel := context.WithCancel(context.Background())
		b.Cleanup(cancel)
		go func() {
			_ = tools.NewMCPServer(ws, "bench").Run(ctx, &tools.LineTransport{Reader: in, Writer: nopCloser{outW}})
		}()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &tools.LineTransport{Reader: outR, Writer: inW}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return cs
	}
	sessions := []*mcp.ClientSession{connect(false), connect(true)}
	times := [2][]time.Duration{}
	params := &mcp.CallToolParams{Name: tools.ReadFileTool, Arguments: map[string]any{"file_path": "kib.txt"}}
	for b.Loop() {
		for i, cs := range sessions {
			start := time.Now()
			if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
				b.Fatal(err, res)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	p50 := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2].Microseconds())
	}
	b.ReportMetric(p50(times[0]), "blocking-p50-µs")
	b.ReportMetric(p50(times[1]), "pollable-p50-µs")
	if base := p50(times[0]); base > 0 {
		b.ReportMetric(p50(times[1])/base, "pollable/blocking-p50")
	}
}
