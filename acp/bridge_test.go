package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

// halfCloser records writes and signals CloseWrite.
type halfCloser struct {
	syncBuffer
	once   sync.Once
	closed chan struct{}
}

func (h *halfCloser) CloseWrite() error {
	h.once.Do(func() { close(h.closed) })
	return nil
}

// waitThenEOF signals reached on its first Read, then blocks until release
// is closed and reports the end of the stream.
type waitThenEOF struct {
	once    sync.Once
	reached chan struct{}
	release <-chan struct{}
}

func (w *waitThenEOF) Read([]byte) (int, error) {
	w.once.Do(func() { close(w.reached) })
	<-w.release
	return 0, io.EOF
}

// bridgeRun runs Bridge with both directions active at once. The client's
// input ends only after the agent's output has been read in full, and the
// agent's output ends when its stdin is half-closed, so every frame and
// answer is delivered before Bridge returns.
func bridgeRun(t *testing.T, p Policy, fromClient, fromAgent []byte) (toAgent, toClient string, err error) {
	t.Helper()
	stdin := &halfCloser{closed: make(chan struct{})}
	agentDone := &waitThenEOF{reached: make(chan struct{}), release: stdin.closed}
	clientDone := &waitThenEOF{reached: make(chan struct{}), release: agentDone.reached}
	var out syncBuffer
	err = Bridge(context.Background(), p,
		io.MultiReader(bytes.NewReader(fromClient), clientDone), stdin,
		io.MultiReader(bytes.NewReader(fromAgent), agentDone), &out)
	return stdin.String(), out.String(), err
}

func TestBridgeSerializesAnswersWithClientFrames(t *testing.T) {
	var fromClient, fromAgent bytes.Buffer
	const n = 500
	for i := range n {
		fmt.Fprintf(&fromClient, `{"jsonrpc":"2.0","id":%d,"result":{"pad":"%s"}}`+"\n", i, strings.Repeat("c", i%97))
		fmt.Fprintf(&fromAgent, `{"jsonrpc":"2.0","id":%d,"method":"terminal/create","params":{"pad":"%s"}}`+"\n", i, strings.Repeat("a", i%89))
		fmt.Fprintf(&fromAgent, `{"jsonrpc":"2.0","method":"session/update","params":{"n":%d}}`+"\n", i)
	}
	toAgent, toClient, err := bridgeRun(t, Policy{}, fromClient.Bytes(), fromAgent.Bytes())
	if err != nil {
		t.Fatalf("Bridge: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(toAgent, "\n"), "\n")
	if len(lines) != 2*n {
		t.Fatalf("agent got %d frames, want %d", len(lines), 2*n)
	}
	refusals := 0
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("interleaved frame reached the agent: %q", l)
		}
		if strings.Contains(l, `"code":-32601`) {
			refusals++
		}
	}
	if refusals != n {
		t.Errorf("%d refusals, want %d", refusals, n)
	}
	if strings.Contains(toClient, "terminal/") || strings.Count(toClient, "\n") != n {
		t.Errorf("client got %d frames (want %d), terminal requests leaked: %v",
			strings.Count(toClient, "\n"), n, strings.Contains(toClient, "terminal/"))
	}
}

func TestBridgePassThroughModes(t *testing.T) {
	fromClient := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{"fs":{"readTextFile":true},"terminal":true}}}` + "\n" +
		"not json\n" + strings.Repeat("x", 300) + "\n"
	fromAgent := `{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file"}` + "\r\n" +
		`{"id":2,"method":"item/tool/call"}` + "\n" + "tail without newline"
	tests := []struct {
		name     string
		p        Policy
		wantWarn bool
	}{
		{"host delegation (acp)", Policy{AllowHostDelegation: true, MaxFrameBytes: 100}, true},
		{"host delegation (codex)", Policy{Mode: ModeCodexAppServer, AllowHostDelegation: true, CodexBlockDynamicTools: true, MaxFrameBytes: 100}, true},
		{"codex default", Policy{Mode: ModeCodexAppServer, MaxFrameBytes: 100}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, buf := logCapture()
			tt.p.Logger = log
			toAgent, toClient, err := bridgeRun(t, tt.p, []byte(fromClient), []byte(fromAgent))
			if err != nil {
				t.Fatalf("Bridge: %v", err)
			}
			if toAgent != fromClient || toClient != fromAgent {
				t.Errorf("not byte-exact:\nagent  %q\nclient %q", toAgent, toClient)
			}
			if got := strings.Contains(buf.String(), "trust boundary"); got != tt.wantWarn {
				t.Errorf("trust-boundary warning logged: %v, want %v (log %q)", got, tt.wantWarn, buf.String())
			}
		})
	}
}

func TestTrustBoundaryWarning(t *testing.T) {
	if w := (Policy{}).TrustBoundaryWarning(); w != "" {
		t.Errorf("default policy warns %q", w)
	}
	if w := (Policy{AllowHostDelegation: true}).TrustBoundaryWarning(); !strings.Contains(w, "agent.allow_host_delegation") {
		t.Errorf("warning %q does not name the setting", w)
	}
}

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
		key  string
	}{
		{"zero value", Policy{}, ""},
		{"explicit limit", Policy{MaxFrameBytes: 1 << 20}, ""},
		{"negative limit", Policy{MaxFrameBytes: -1}, "acp.max_frame_bytes"},
		{"huge limit", Policy{MaxFrameBytes: maxFrameLimit + 1}, "acp.max_frame_bytes"},
		{"unknown mode", Policy{Mode: Mode(7)}, "agent.mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			var ce *errdefs.ConfigError
			switch {
			case tt.key == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.key != "" && (!errors.As(err, &ce) || ce.Key != tt.key || !errors.Is(err, errdefs.ErrInvalidValue)):
				t.Fatalf("Validate() = %v, want a ConfigError for %s", err, tt.key)
			}
		})
	}
	err := Bridge(context.Background(), Policy{MaxFrameBytes: -5}, nil, nil, nil, nil)
	if !errors.Is(err, errdefs.ErrConfig) {
		t.Fatalf("Bridge with a bad policy: %v, want a config error", err)
	}
}

func TestBridgeStopsOnContext(t *testing.T) {
	clientR, clientW := io.Pipe()
	agentR, agentW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Bridge(ctx, Policy{}, clientR, io.Discard, agentR, io.Discard) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Bridge = %v, want context.Canceled", err)
	}
	clientW.Close()
	agentW.Close()
}

func TestBridgeReportsReadErrors(t *testing.T) {
	boom := errors.New("boom")
	stdin := &halfCloser{closed: make(chan struct{})}
	err := Bridge(context.Background(), Policy{}, bytes.NewReader(nil), stdin,
		&chunkReader{data: []byte("{}\n"), err: boom}, io.Discard)
	if !errors.Is(err, boom) || !errors.Is(err, errdefs.ErrContainer) {
		t.Fatalf("Bridge = %v, want the agent read error as a container error", err)
	}

	clientBoom := readerFunc(func([]byte) (int, error) { return 0, boom })
	agentR, agentW := io.Pipe()
	defer agentW.Close()
	err = Bridge(context.Background(), Policy{}, clientBoom, io.Discard, agentR, io.Discard)
	if !errors.Is(err, boom) {
		t.Fatalf("Bridge = %v, want the client read error", err)
	}
}

// TestBridgeWithFakeAgent drives a whole ACP exchange through pipes: the
// agent reports the capabilities it saw, asks for a file and a terminal,
// then answers a prompt.
func TestBridgeWithFakeAgent(t *testing.T) {
	clientInR, clientInW := io.Pipe()
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	clientOutR, clientOutW := io.Pipe()

	agentErr := make(chan error, 1)
	go func() { agentErr <- fakeAgent(bufio.NewReader(stdinR), stdoutW) }()

	bridgeErr := make(chan error, 1)
	go func() {
		bridgeErr <- Bridge(context.Background(), Policy{}, clientInR, pipeHalfCloser{stdinW}, stdoutR, clientOutW)
		clientOutW.Close()
	}()

	out := bufio.NewReader(clientOutR)
	send := func(s string) {
		if _, err := io.WriteString(clientInW, s+"\n"); err != nil {
			t.Fatalf("client write: %v", err)
		}
	}
	recv := func() map[string]any {
		line, err := out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("client read: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("client got a non-JSON frame %q", line)
		}
		if method, _ := m["method"].(string); strings.HasPrefix(method, "fs/") || strings.HasPrefix(method, "terminal/") {
			t.Fatalf("client received a blocked request: %s", line)
		}
		return m
	}

	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,"_meta":{"terminal-auth":true,"keep":1}},"clientInfo":{"name":"test"}}}`)
	init := recv()
	saw, _ := json.Marshal(init["result"].(map[string]any)["sawCapabilities"])
	if string(saw) != `{"_meta":{"keep":1}}` {
		t.Fatalf("agent saw capabilities %s, want only the kept _meta", saw)
	}
	refusals := recv() // the agent reports how its fs and terminal requests ended
	if got := fmt.Sprint(refusals["params"]); !strings.Contains(got, "-32601 -32601") {
		t.Fatalf("agent report %v, want two -32601 refusals", got)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`)
	if resp := recv(); fmt.Sprint(resp["id"]) != "1" || resp["result"] == nil {
		t.Fatalf("prompt response %v", resp)
	}
	clientInW.Close()
	if err := <-agentErr; err != nil {
		t.Fatalf("fake agent: %v", err)
	}
	if err := <-bridgeErr; err != nil {
		t.Fatalf("Bridge: %v", err)
	}
}

type pipeHalfCloser struct{ *io.PipeWriter }

func (p pipeHalfCloser) CloseWrite() error { return p.Close() }

// fakeAgent plays a small ACP agent over in and out.
func fakeAgent(in *bufio.Reader, out *io.PipeWriter) error {
	defer out.Close()
	// Like a real agent, read stdin independently of writing stdout.
	type msg struct {
		m   map[string]any
		err error
	}
	inbox := make(chan msg, 16)
	go func() {
		for {
			line, err := in.ReadBytes('\n')
			if err != nil {
				inbox <- msg{err: err}
				return
			}
			var m map[string]any
			err = json.Unmarshal(line, &m)
			inbox <- msg{m, err}
			if err != nil {
				return
			}
		}
	}()
	read := func() (map[string]any, error) {
		r := <-inbox
		return r.m, r.err
	}
	write := func(s string) error { _, err := io.WriteString(out, s+"\n"); return err }

	init, err := read()
	if err != nil {
		return err
	}
	caps, _ := json.Marshal(init["params"].(map[string]any)["clientCapabilities"])
	if err := write(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"sawCapabilities":` + string(caps) + `}}`); err != nil {
		return err
	}
	if err := write(`{"jsonrpc":"2.0","id":"f1","method":"fs/read_text_file","params":{"path":"/etc/hostname"}}`); err != nil {
		return err
	}
	if err := write(`{"jsonrpc":"2.0","id":2,"method":"terminal/create","params":{"command":"id"}}`); err != nil {
		return err
	}
	var codes []string
	for range 2 {
		m, err := read()
		if err != nil {
			return err
		}
		codes = append(codes, fmt.Sprint(m["error"].(map[string]any)["code"]))
	}
	if err := write(`{"jsonrpc":"2.0","method":"session/update","params":{"codes":"` + strings.Join(codes, " ") + `"}}`); err != nil {
		return err
	}
	if _, err := read(); err != nil {
		return err
	}
	if err := write(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`); err != nil {
		return err
	}
	if _, err := read(); err != io.EOF {
		return fmt.Errorf("agent stdin not closed after the client's input ended: %v", err)
	}
	return nil
}

// writeCounter records each write as one element.
type writeCounter struct {
	mu     sync.Mutex
	writes []string
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

func TestPumpBatchesBufferedFrames(t *testing.T) {
	note := `{"jsonrpc":"2.0","method":"session/update","params":{"n":1}}` + "\n"
	blocked := `{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{}}` + "\n"
	big := `{"jsonrpc":"2.0","method":"session/update","params":{"t":"` + strings.Repeat("x", batchBytes) + `"}}` + "\n"
	tests := []struct {
		name   string
		input  string
		sizes  []int // read sizes, in turn
		writes []string
	}{
		{name: "one read, one write", input: strings.Repeat(note, 50), sizes: []int{1 << 20}, writes: []string{strings.Repeat(note, 50)}},
		{name: "a frame per read, a write per frame", input: note + note, sizes: []int{len(note)}, writes: []string{note, note}},
		{name: "a refused request splits nothing it need not", input: note + blocked + note, sizes: []int{1 << 20}, writes: []string{note + note}},
		{name: "a frame over the batch goes alone", input: note + big + note, sizes: []int{1 << 20}, writes: []string{note, big, note}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Policy{Mode: ModeACP}
			p.Logger, _ = logCapture()
			var out, back writeCounter
			err := pump(context.Background(), newFilter(p), agent, &chunkReader{data: []byte(tt.input), sizes: tt.sizes},
				&frameWriter{w: &out}, &frameWriter{w: &back}, p.maxFrame())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(out.writes, tt.writes) {
				t.Fatalf("got %d writes %.120q, want %d %.120q", len(out.writes), out.writes, len(tt.writes), tt.writes)
			}
		})
	}
}
