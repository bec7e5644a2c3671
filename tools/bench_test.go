package tools

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// timed is one contender of benchTimed.
type timed struct {
	name string
	f    func() error
}

// benchTimed times the contenders in turn, one call each per iteration,
// and reports each one's p50 and p99 and the ratio of every p50 to the
// first contender's (the baseline of the same run).
func benchTimed(b *testing.B, cs ...timed) {
	b.Helper()
	ts := make([][]time.Duration, len(cs))
	b.ResetTimer()
	for b.Loop() {
		for i, c := range cs {
			start := time.Now()
			if err := c.f(); err != nil {
				b.Fatalf("%s: %v", c.name, err)
			}
			ts[i] = append(ts[i], time.Since(start))
		}
	}
	b.StopTimer()
	pct := func(s []time.Duration, p float64) float64 {
		return float64(s[min(len(s)-1, int(float64(len(s))*p))].Microseconds())
	}
	for i, c := range cs {
		slices.Sort(ts[i])
		b.ReportMetric(pct(ts[i], 0.50), c.name+"-p50-µs")
		b.ReportMetric(pct(ts[i], 0.99), c.name+"-p99-µs")
		if base := pct(ts[0], 0.50); i > 0 && base > 0 {
			b.ReportMetric(pct(ts[i], 0.50)/base, c.name+"/"+cs[0].name+"-p50")
		}
	}
}

// benchPair times the same call made directly and through an in-memory MCP
// session.
func benchPair(b *testing.B, direct func() error, viaMCP func() error) {
	b.Helper()
	benchTimed(b, timed{"direct", direct}, timed{"mcp", viaMCP})
}

func callOK(cs *mcp.ClientSession, name string, args map[string]any) func() error {
	return func() error {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err == nil && res.IsError {
			err = res.GetError()
			if err == nil {
				err = &ToolError{Tool: name, Msg: res.Content[0].(*mcp.TextContent).Text}
			}
		}
		return err
	}
}

func BenchmarkReadFile1KiB(b *testing.B) {
	ws, err := NewWorkspace(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	line := strings.Repeat("x", 63) + "\n"
	if _, err := ws.WriteFile(context.Background(), WriteFileParams{FilePath: "one.txt", Content: strings.Repeat(line, 16)}); err != nil {
		b.Fatal(err)
	}
	cs := connectMCP(b, ws)
	benchPair(b,
		func() error {
			_, err := ws.ReadFile(context.Background(), ReadFileParams{FilePath: "one.txt"})
			return err
		},
		callOK(cs, ReadFileTool, map[string]any{"file_path": "one.txt"}))
}

// BenchmarkShellExecuteTrue compares shell_execute ["true"], directly and
// over MCP, with the floor under it: starting /bin/true and waiting for it,
// nothing else.
func BenchmarkShellExecuteTrue(b *testing.B) {
	ws, err := NewWorkspace(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	cs := connectMCP(b, ws)
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	benchTimed(b,
		timed{"spawn", func() error {
			p, err := os.StartProcess(truePath, []string{"true"}, &os.ProcAttr{})
			if err == nil {
				_, err = p.Wait()
			}
			return err
		}},
		timed{"direct", func() error {
			_, err := ws.ShellExecute(context.Background(), ShellParams{Command: []string{"true"}})
			return err
		}},
		timed{"mcp", callOK(cs, ShellExecuteTool, map[string]any{"command": []string{"true"}})})
}

// BenchmarkReadFileAllocs reports what one read_file of 1 KiB allocates
// directly (read buffers are sized to the file, not 64 KiB each).
func BenchmarkReadFileAllocs(b *testing.B) {
	ws, err := NewWorkspace(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	line := strings.Repeat("x", 63) + "\n"
	if _, err := ws.WriteFile(context.Background(), WriteFileParams{FilePath: "one.txt", Content: strings.Repeat(line, 16)}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ws.ReadFile(context.Background(), ReadFileParams{FilePath: "one.txt"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChangedFiles compares the two ways shell_execute learns what a
// command changed, around a command that changes nothing, in workspaces of
// 1,000 and 20,000 files: a snapshot of the tree before and after (the
// baseline; what platforms without inotify do) and the change tracker's
// window.
func BenchmarkChangedFiles(b *testing.B) {
	for _, files := range []int{1000, 20000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			dir := b.TempDir()
			for i := range files {
				sub := filepath.Join(dir, fmt.Sprintf("d%03d", i/100))
				if err := os.MkdirAll(sub, 0o755); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%d", i)), []byte("x"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			ws, err := NewWorkspace(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer ws.Close()
			if ws.changeTracker() == nil {
				b.Skip("no change tracker on this platform")
			}
			benchTimed(b,
				timed{"snapshots", func() error {
					_, _ = diffSnapshots(ws.snapshot(), ws.snapshot(), MaxChangedFiles)
					return nil
				}},
				timed{"tracker", func() error {
					ws.endChanges(ws.beginChanges(), MaxChangedFiles)
					return nil
				}})
		})
	}
}
