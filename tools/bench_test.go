package tools

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchPair times the same call made directly and through an in-memory MCP
// session, alternating, and reports the p50s, the p99s and their ratio.
func benchPair(b *testing.B, direct func() error, viaMCP func() error) {
	b.Helper()
	var d, m []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if err := direct(); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(start))
		start = time.Now()
		if err := viaMCP(); err != nil {
			b.Fatal(err)
		}
		m = append(m, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(d)
	slices.Sort(m)
	pct := func(s []time.Duration, p float64) float64 {
		return float64(s[min(len(s)-1, int(float64(len(s))*p))].Microseconds())
	}
	b.ReportMetric(pct(d, 0.50), "direct-p50-µs")
	b.ReportMetric(pct(d, 0.99), "direct-p99-µs")
	b.ReportMetric(pct(m, 0.50), "mcp-p50-µs")
	b.ReportMetric(pct(m, 0.99), "mcp-p99-µs")
	if p := pct(d, 0.50); p > 0 {
		b.ReportMetric(pct(m, 0.50)/p, "mcp/direct-p50")
	}
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

func BenchmarkShellExecuteTrue(b *testing.B) {
	ws, err := NewWorkspace(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	cs := connectMCP(b, ws)
	benchPair(b,
		func() error {
			_, err := ws.ShellExecute(context.Background(), ShellParams{Command: []string{"true"}})
			return err
		},
		callOK(cs, ShellExecuteTool, map[string]any{"command": []string{"true"}}))
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
