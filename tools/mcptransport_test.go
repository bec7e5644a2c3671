package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readModes are the two ways a LineTransport reads, by name.
var readModes = []struct {
	name   string
	direct bool
}{{"reader goroutine", false}, {"direct read", true}}

// connectLine connects a LineTransport over r and w.
func connectLine(t testing.TB, r io.ReadCloser, w io.WriteCloser, limit int, direct bool) mcp.Connection {
	t.Helper()
	c, err := (&LineTransport{Reader: r, Writer: w, MaxFrameBytes: limit, DirectRead: direct}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// linePair returns two connections joined by pipes.
func linePair(t testing.TB, limit int, direct bool) (a, b mcp.Connection) {
	t.Helper()
	abR, abW := io.Pipe()
	baR, baW := io.Pipe()
	return connectLine(t, baR, abW, limit, direct), connectLine(t, abR, baW, limit, direct)
}

// feed returns a connection reading input (then EOF) and discarding writes.
func feed(t testing.TB, input string, limit int, direct bool) mcp.Connection {
	t.Helper()
	return connectLine(t, io.NopCloser(strings.NewReader(input)), nopWriteCloser{io.Discard}, limit, direct)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func mustID(t testing.TB, v any) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// wire is a message's encoding, for comparisons.
func wire(t testing.TB, m jsonrpc.Message) string {
	t.Helper()
	data, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestLineTransportRoundTrip(t *testing.T) {
	big := strings.Repeat("x", 3*frameReaderBytes) // longer than the read buffer
	tests := []struct {
		name string
		msg  jsonrpc.Message
	}{
		{"request", &jsonrpc.Request{ID: mustID(t, float64(7)), Method: "tools/call", Params: json.RawMessage(`{"name":"ls","arguments":{"path":"."}}`)}},
		{"notification", &jsonrpc.Request{Method: "notifications/initialized"}},
		{"string id", &jsonrpc.Request{ID: mustID(t, "a-1"), Method: "ping"}},
		{"result", &jsonrpc.Response{ID: mustID(t, float64(7)), Result: json.RawMessage(`{"content":[{"type":"text","text":"ok\n"}]}`)}},
		{"error", &jsonrpc.Response{ID: mustID(t, float64(8)), Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad"}}},
		{"larger than the read buffer", &jsonrpc.Response{ID: mustID(t, float64(9)), Result: json.RawMessage(`{"text":"` + big + `"}`)}},
	}
	for _, mode := range readModes {
		a, b := linePair(t, 0, mode.direct)
		ctx := context.Background()
		for _, tt := range tests {
			t.Run(mode.name+"/"+tt.name, func(t *testing.T) {
				errc := make(chan error, 1)
				go func() { errc <- a.Write(ctx, tt.msg) }()
				got, err := b.Read(ctx)
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
				if err := <-errc; err != nil {
					t.Fatalf("Write: %v", err)
				}
				if w, g := wire(t, tt.msg), wire(t, got); g != w {
					t.Errorf("got %.200s, want %.200s", g, w)
				}
			})
		}
	}
}

func TestLineTransportInput(t *testing.T) {
	req := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	tests := []struct {
		name    string
		input   string
		limit   int
		methods int   // messages read before the error
		wantErr error // nil means io.EOF
		errText string
	}{
		{name: "empty stream", input: ""},
		{name: "one line", input: req + "\n", methods: 1},
		{name: "crlf and blank lines", input: "\n" + req + "\r\n\r\n  \n" + req + "\n", methods: 2},
		{name: "unterminated last message", input: req + "\n" + req, methods: 2},
		{name: "exactly at the limit", input: req + "\n", limit: len(req), methods: 1},
		{name: "over the limit", input: req + "\n" + req + " \n", limit: len(req) - 1, wantErr: ErrFrameTooLarge, errText: fmt.Sprint(len(req) - 1)},
		{name: "over the limit, beyond the read buffer", input: req + "\n" + `{"x":"` + strings.Repeat("y", 2*frameReaderBytes) + `"}` + "\n",
			limit: frameReaderBytes + 10, methods: 1, wantErr: ErrFrameTooLarge},
		{name: "endless line", input: strings.Repeat("z", 5*frameReaderBytes), limit: frameReaderBytes, wantErr: ErrFrameTooLarge},
		{name: "batch", input: "[" + req + "]\n", wantErr: ErrBatchUnsupported},
		{name: "not JSON", input: req + "\nhello\n", methods: 1, errText: "malformed MCP message"},
		{name: "wrong version", input: `{"jsonrpc":"1.0","id":1,"method":"ping"}` + "\n", errText: "malformed MCP message"},
	}
	for _, mode := range readModes {
		for _, tt := range tests {
			t.Run(mode.name+"/"+tt.name, func(t *testing.T) {
				testLineInput(t, feed(t, tt.input, tt.limit, mode.direct), tt.methods, tt.wantErr, tt.errText)
			})
		}
	}
}

// testLineInput reads methods pings from c, then expects the end: io.EOF
// when wantErr and errText are unset.
func testLineInput(t *testing.T, c mcp.Connection, methods int, wantErr error, errText string) {
	t.Helper()
	ctx := context.Background()
	for i := range methods {
		m, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if r, ok := m.(*jsonrpc.Request); !ok || r.Method != "ping" {
			t.Fatalf("message %d = %#v", i, m)
		}
	}
	_, err := c.Read(ctx)
	switch {
	case wantErr == nil && errText == "":
		if err != io.EOF {
			t.Fatalf("end of stream: got %v, want io.EOF", err)
		}
	case wantErr != nil && !errors.Is(err, wantErr):
		t.Fatalf("got %v, want %v", err, wantErr)
	case err == nil || !strings.Contains(err.Error(), errText):
		t.Fatalf("got %v, want an error saying %q", err, errText)
	}
	// The end is sticky.
	if _, again := c.Read(ctx); again == nil || again.Error() != err.Error() {
		t.Errorf("second Read after the end: %v, want %v", again, err)
	}
}

func TestLineTransportConcurrentWrites(t *testing.T) {
	r, w := io.Pipe()
	c := connectLine(t, io.NopCloser(strings.NewReader("")), w, 0, false)
	const writers, each = 16, 40
	payload := strings.Repeat("p", 10<<10) // big enough that an unserialized write would tear
	seen := make(map[string]bool)
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			m, err := jsonrpc.DecodeMessage(sc.Bytes())
			if err != nil {
				done <- fmt.Errorf("torn line %.80q: %w", sc.Text(), err)
				return
			}
			req := m.(*jsonrpc.Request)
			if string(req.Params) != `"`+payload+`"` {
				done <- fmt.Errorf("message %s carries the wrong payload", req.Method)
				return
			}
			seen[req.Method] = true
		}
		done <- sc.Err()
	}()
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				msg := &jsonrpc.Request{Method: fmt.Sprintf("m%d-%d", g, i), Params: json.RawMessage(`"` + payload + `"`)}
				if err := c.Write(context.Background(), msg); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	w.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(seen) != writers*each {
		t.Fatalf("read %d distinct messages, want %d", len(seen), writers*each)
	}
}

// stuckReader blocks every Read until released; its Close does nothing,
// like a terminal stdin.
type stuckReader struct{ release chan struct{} }

func (s stuckReader) Read([]byte) (int, error) { <-s.release; return 0, io.EOF }
func (stuckReader) Close() error               { return nil }

func TestLineTransportClose(t *testing.T) {
	t.Run("close unblocks a pending read", func(t *testing.T) {
		s := stuckReader{release: make(chan struct{})}
		defer close(s.release)
		c := connectLine(t, s, nopWriteCloser{io.Discard}, 0, false)
		errc := make(chan error, 1)
		go func() { _, err := c.Read(context.Background()); errc <- err }()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != io.EOF {
			t.Fatalf("Read after Close: %v, want io.EOF", err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})
	t.Run("direct read: close unblocks a read on a closable stream", func(t *testing.T) {
		r, w := io.Pipe()
		defer w.Close()
		c := connectLine(t, r, nopWriteCloser{io.Discard}, 0, true)
		errc := make(chan error, 1)
		go func() { _, err := c.Read(context.Background()); errc <- err }()
		time.Sleep(10 * time.Millisecond) // let the Read block
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != io.EOF {
			t.Fatalf("Read after Close: %v, want io.EOF", err)
		}
	})
	t.Run("write after close", func(t *testing.T) {
		c := feed(t, "", 0, false)
		_ = c.Close()
		if err := c.Write(context.Background(), &jsonrpc.Request{Method: "ping"}); !errors.Is(err, mcp.ErrConnectionClosed) {
			t.Fatalf("got %v, want ErrConnectionClosed", err)
		}
	})
	t.Run("close closes both streams", func(t *testing.T) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		c := connectLine(t, inR, outW, 0, false)
		_ = c.Close()
		if _, err := inW.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("reader still open: %v", err)
		}
		if _, err := outR.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("writer still open: %v", err)
		}
	})
	t.Run("ended context", func(t *testing.T) {
		c := feed(t, `{"jsonrpc":"2.0","method":"ping"}`+"\n", 0, false)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.Read(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Read: %v", err)
		}
		if err := c.Write(ctx, &jsonrpc.Request{Method: "ping"}); !errors.Is(err, context.Canceled) {
			t.Errorf("Write: %v", err)
		}
	})
	t.Run("missing streams", func(t *testing.T) {
		if _, err := (&LineTransport{}).Connect(context.Background()); err == nil {
			t.Fatal("Connect without streams succeeded")
		}
	})
}

// lineMCP serves ws over LineTransport pipes and returns a client session.
func lineMCP(t testing.TB, ws *Workspace, direct bool) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	toServerR, toServerW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	ss, err := NewMCPServer(ws, "test").Connect(ctx, &LineTransport{Reader: toServerR, Writer: toClientW, DirectRead: direct}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, &LineTransport{Reader: toClientR, Writer: toServerW, DirectRead: direct}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	return cs
}

func TestLineTransportMCPSession(t *testing.T) {
	ws := newTestWorkspace(t)
	writeHostFile(t, ws, "a.txt", "one\ntwo\n")
	for _, mode := range readModes {
		t.Run(mode.name, func(t *testing.T) {
			cs := lineMCP(t, ws, mode.direct)
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: ReadFileTool, Arguments: map[string]any{"file_path": "a.txt"}})
					if err != nil || res.IsError {
						t.Errorf("read_file: %v %+v", err, res)
						return
					}
					if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "two") {
						t.Errorf("read_file result %q lacks the file", text)
					}
				})
			}
			wg.Wait()
		})
	}
}

// BenchmarkLineTransport times read_file round trips of a 1 KiB file over
// OS pipes through mcp.IOTransport, through LineTransport and through
// LineTransport with DirectRead, alternating in the same run, and reports
// the p50s, their ratios and the bytes each allocates per call (client
// and server together).
func BenchmarkLineTransport(b *testing.B) {
	ws, err := NewWorkspace(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ws.Close() })
	if err := os.WriteFile(filepath.Join(ws.Dir(), "kib.txt"), []byte(strings.Repeat("0123456789abcde\n", 64)), 0o644); err != nil {
		b.Fatal(err)
	}
	type pair struct{ server, client mcp.Transport }
	pipes := func() (in, out *os.File, inW, outW *os.File) {
		inR, inWr, err1 := os.Pipe()
		outR, outWr, err2 := os.Pipe()
		if err := errors.Join(err1, err2); err != nil {
			b.Fatal(err)
		}
		return inR, outR, inWr, outWr
	}
	connect := func(p pair) *mcp.ClientSession {
		ctx := context.Background()
		ss, err := NewMCPServer(ws, "bench").Connect(ctx, p.server, nil)
		if err != nil {
			b.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, p.client, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
		return cs
	}
	r1, r2, w1, w2 := pipes()
	sdk := connect(pair{&mcp.IOTransport{Reader: r1, Writer: w2}, &mcp.IOTransport{Reader: r2, Writer: w1}})
	r1, r2, w1, w2 = pipes()
	line := connect(pair{&LineTransport{Reader: r1, Writer: w2}, &LineTransport{Reader: r2, Writer: w1}})
	r1, r2, w1, w2 = pipes()
	direct := connect(pair{&LineTransport{Reader: r1, Writer: w2, DirectRead: true}, &LineTransport{Reader: r2, Writer: w1, DirectRead: true}})
	calls := []func() error{
		callOK(sdk, ReadFileTool, map[string]any{"file_path": "kib.txt"}),
		callOK(line, ReadFileTool, map[string]any{"file_path": "kib.txt"}),
		callOK(direct, ReadFileTool, map[string]any{"file_path": "kib.txt"}),
	}
	var times [3][]time.Duration
	for b.Loop() {
		for i, call := range calls {
			start := time.Now()
			if err := call(); err != nil {
				b.Fatal(err)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	b.StopTimer()
	var alloc [3]float64
	const sample = 200
	for i, call := range calls {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range sample {
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		alloc[i] = float64(after.TotalAlloc-before.TotalAlloc) / sample
	}
	p50 := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2].Nanoseconds()) / 1e3
	}
	b.ReportMetric(p50(times[0]), "sdk-p50-µs")
	b.ReportMetric(p50(times[1]), "line-p50-µs")
	b.ReportMetric(p50(times[1])/p50(times[0]), "line/sdk-p50")
	b.ReportMetric(alloc[0], "sdk-B/call")
	b.ReportMetric(alloc[1], "line-B/call")
	b.ReportMetric(alloc[1]/alloc[0], "line/sdk-B")
	b.ReportMetric(p50(times[2]), "direct-p50-µs")
	b.ReportMetric(p50(times[2])/p50(times[0]), "direct/sdk-p50")
}

// FuzzDecodeLine checks that every line the transport accepts is accepted
// by the SDK's own decoder with the same meaning, and that valid JSON the
// SDK accepts the transport accepts too. (Nesting deeper than the SDK's
// bound of 1000 is the one difference: the SDK refuses it again when it
// decodes the params or result.)
func FuzzDecodeLine(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ls"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"x","method":""}`,
		`{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad","data":[1]}}`,
		`{"jsonrpc":"2.0","id":null,"result":{}}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"JSONRPC":"2.0","ID":1,"Method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping","params":null}`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":4,"method":7}`,
		`{"jsonrpc":"2.0","id":3,"error":{"Code":7,"Message":"x","code":-1}}`,
		`{"jsonrpc":"2.0","id":3,"error":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '[' {
			return
		}
		got, err := decodeLine(line)
		want, sdkErr := jsonrpc.DecodeMessage(line)
		if err != nil {
			if sdkErr == nil && json.Valid(line) {
				t.Fatalf("refused %q (%v), the SDK accepts it", line, err)
			}
			return
		}
		if sdkErr != nil {
			t.Fatalf("accepted %q, the SDK refuses it: %v", line, sdkErr)
		}
		if g, w := wire(t, got), wire(t, want); g != w {
			t.Fatalf("decoded %q as %s, the SDK as %s", line, g, w)
		}
	})
}
