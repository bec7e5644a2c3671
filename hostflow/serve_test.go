package hostflow

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/podbot/podbot/acp"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
)

// fakeAgent plays the server in the container: it reads its stdin, writes
// its stdout and stderr, and returns its exit status.
type fakeAgent func(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int

// fakeExecer runs a fakeAgent in place of an engine exec. Like the engine,
// it returns once the agent's output has ended.
type fakeExecer struct {
	agent   fakeAgent
	err     error // returned instead of running the agent
	mu      sync.Mutex
	gotOpts engine.ExecOptions
}

func (f *fakeExecer) Exec(ctx context.Context, id string, opts engine.ExecOptions) (int, error) {
	f.mu.Lock()
	f.gotOpts = opts
	f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	code := make(chan int, 1)
	go func() { code <- f.agent(ctx, opts.Stdin, opts.Stdout, opts.Stderr) }()
	select {
	case c := <-code:
		return c, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// readLines returns every line the agent reads until EOF.
func readLines(stdin io.Reader) []string {
	var lines []string
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

func serve(t *testing.T, ctx context.Context, ex Execer, p acp.Policy, stdin string) (int, string, error) {
	t.Helper()
	var out bytes.Buffer
	code, err := Serve(ctx, ex, Options{ContainerID: "c1", Cmd: []string{"agent"}, Policy: p,
		Stdin: strings.NewReader(stdin), Stdout: &out})
	return code, out.String(), err
}

const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,` +
	`"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,` +
	`"auth":{"terminal":true},"_meta":{"terminal-auth":true,"keep":1}},"clientInfo":{"name":"ide"}}}`

func TestServeMasksInitializeAndPassesTheAnswerByteForByte(t *testing.T) {
	var seen []string
	answer := "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":1}}\r\n"
	ex := &fakeExecer{agent: func(_ context.Context, in io.Reader, out, _ io.Writer) int {
		seen = readLines(in)
		io.WriteString(out, answer)
		return 0
	}}
	code, out, err := serve(t, context.Background(), ex, acp.Policy{Mode: acp.ModeACP}, initialize+"\n")
	if err != nil || code != 0 {
		t.Fatalf("Serve = %d, %v", code, err)
	}
	if out != answer {
		t.Errorf("stdout = %q, want exactly the agent's frame %q", out, answer)
	}
	if len(seen) != 1 {
		t.Fatalf("agent read %d lines, want 1: %q", len(seen), seen)
	}
	var msg struct {
		Params struct {
			ClientCapabilities map[string]json.RawMessage
			ClientInfo         map[string]string
		}
	}
	if err := json.Unmarshal([]byte(seen[0]), &msg); err != nil {
		t.Fatal(err)
	}
	caps := msg.Params.ClientCapabilities
	for _, k := range []string{"fs", "terminal"} {
		if _, ok := caps[k]; ok {
			t.Errorf("agent saw clientCapabilities.%s: %s", k, seen[0])
		}
	}
	if strings.Contains(seen[0], "terminal-auth") || strings.Contains(string(caps["auth"]), "terminal") {
		t.Errorf("agent saw a terminal-auth capability: %s", seen[0])
	}
	if !strings.Contains(string(caps["_meta"]), `"keep":1`) || msg.Params.ClientInfo["name"] != "ide" {
		t.Errorf("other fields were not kept: %s", seen[0])
	}
}

func TestServeRefusesHostMethodsWithoutReachingTheClient(t *testing.T) {
	tests := []struct {
		name    string
		request string
		wantID  string
	}{
		{"fs read, numeric id", `{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{"path":"/etc/passwd"}}`, "7"},
		{"terminal create, string id", `{"jsonrpc":"2.0","id":"t-1","method":"terminal/create","params":{"command":"id"}}`, `"t-1"`},
		{"mcp, null id", `{"jsonrpc":"2.0","id":null,"method":"mcp/connect","params":{}}`, "null"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The client stays connected until the agent has its answer.
			clientIn, closeClient := io.Pipe()
			var answers []string
			ex := &fakeExecer{agent: func(_ context.Context, in io.Reader, out, _ io.Writer) int {
				io.WriteString(out, tc.request+"\n")
				sc := bufio.NewScanner(in)
				if sc.Scan() {
					answers = append(answers, sc.Text())
				}
				closeClient.Close()
				for sc.Scan() {
					answers = append(answers, sc.Text())
				}
				return 0
			}}
			var stdout bytes.Buffer
			code, err := Serve(context.Background(), ex, Options{ContainerID: "c", Cmd: []string{"a"},
				Policy: acp.Policy{Mode: acp.ModeACP}, Stdin: clientIn, Stdout: &stdout})
			out := stdout.String()
			if err != nil || code != 0 {
				t.Fatalf("Serve = %d, %v", code, err)
			}
			if out != "" {
				t.Errorf("the client received %q; blocked requests must never reach it", out)
			}
			if len(answers) != 1 {
				t.Fatalf("agent got %d answers, want 1: %q", len(answers), answers)
			}
			var resp struct {
				ID    json.RawMessage
				Error struct{ Code int }
			}
			if err := json.Unmarshal([]byte(answers[0]), &resp); err != nil {
				t.Fatal(err)
			}
			if string(resp.ID) != tc.wantID || resp.Error.Code != -32601 {
				t.Errorf("answer %s: want id %s and code -32601", answers[0], tc.wantID)
			}
		})
	}
}

func TestServeExitStatusAndHalfClose(t *testing.T) {
	tests := []struct {
		name string
		code int
	}{{"normal exit", 0}, {"failure", 3}, {"killed", 137}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			ex := &fakeExecer{agent: func(_ context.Context, in io.Reader, _, _ io.Writer) int {
				got = readLines(in) // returns only when the client's EOF reached the agent
				return tc.code
			}}
			frame := `{"jsonrpc":"2.0","method":"session/cancel","params":{}}`
			code, out, err := serve(t, context.Background(), ex, acp.Policy{Mode: acp.ModeACP}, frame+"\n")
			if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Errorf("status %d, want %d", code, tc.code)
			}
			if out != "" || len(got) != 1 || got[0] != frame {
				t.Errorf("stdout %q, agent read %q", out, got)
			}
		})
	}
}

func TestServeAgentExitsWhileClientStillOpen(t *testing.T) {
	clientIn, keepOpen := io.Pipe()
	defer keepOpen.Close()
	ex := &fakeExecer{agent: func(_ context.Context, _ io.Reader, out, _ io.Writer) int {
		io.WriteString(out, "{\"jsonrpc\":\"2.0\",\"method\":\"bye\"}\n")
		return 9
	}}
	var out bytes.Buffer
	code, err := Serve(context.Background(), ex, Options{ContainerID: "c", Cmd: []string{"a"},
		Policy: acp.Policy{Mode: acp.ModeACP}, Stdin: clientIn, Stdout: &out})
	if err != nil || code != 9 {
		t.Fatalf("Serve = %d, %v; want 9, nil", code, err)
	}
	if out.String() != "{\"jsonrpc\":\"2.0\",\"method\":\"bye\"}\n" {
		t.Errorf("stdout %q", out.String())
	}
}

func TestServeCancelStopsTheExec(t *testing.T) {
	clientIn, keepOpen := io.Pipe()
	defer keepOpen.Close()
	started := make(chan struct{})
	ex := &fakeExecer{agent: func(ctx context.Context, _ io.Reader, _, _ io.Writer) int {
		close(started)
		<-ctx.Done()
		return 0
	}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	var out bytes.Buffer
	_, err := Serve(ctx, ex, Options{ContainerID: "c", Cmd: []string{"a"},
		Policy: acp.Policy{Mode: acp.ModeACP}, Stdin: clientIn, Stdout: &out})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if out.Len() != 0 {
		t.Errorf("stdout %q after cancel", out.String())
	}
}

func TestServeExecFailureWritesNothing(t *testing.T) {
	boom := &errdefs.ContainerError{Op: "exec", Reason: errdefs.ErrNotFound, Msg: "no such container"}
	ex := &fakeExecer{err: boom}
	code, out, err := serve(t, context.Background(), ex, acp.Policy{Mode: acp.ModeACP}, initialize+"\n")
	if !errors.Is(err, errdefs.ErrNotFound) || code != 0 {
		t.Fatalf("Serve = %d, %v; want the exec's error", code, err)
	}
	if out != "" {
		t.Errorf("stdout %q on failure", out)
	}
}

func TestServeCodexPassThroughIsByteExact(t *testing.T) {
	// Not JSON, bare \r, no final newline: the Codex pass-through does not look.
	fromClient := "{\"id\":1,\"method\":\"initialize\"}\r\nnot json\rstill\n{\"partial\":"
	fromAgent := "{\"id\":1,\"result\":{}}\n\x00\xffraw"
	var got []byte
	ex := &fakeExecer{agent: func(_ context.Context, in io.Reader, out, _ io.Writer) int {
		got, _ = io.ReadAll(in)
		io.WriteString(out, fromAgent)
		return 0
	}}
	code, out, err := serve(t, context.Background(), ex, acp.Policy{Mode: acp.ModeCodexAppServer}, fromClient)
	if err != nil || code != 0 {
		t.Fatalf("Serve = %d, %v", code, err)
	}
	if string(got) != fromClient || out != fromAgent {
		t.Errorf("agent got %q, client got %q", got, out)
	}
}

func TestServeLogsAgentStderrNotStdout(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	ex := &fakeExecer{agent: func(_ context.Context, _ io.Reader, out, errw io.Writer) int {
		io.WriteString(errw, "warming up\nhalf")
		io.WriteString(errw, " a line")
		return 0
	}}
	var out bytes.Buffer
	code, err := Serve(context.Background(), ex, Options{ContainerID: "c", Cmd: []string{"agent"},
		Policy: acp.Policy{Mode: acp.ModeACP}, Stdin: strings.NewReader(""), Stdout: &out, Logger: logger})
	if err != nil || code != 0 {
		t.Fatalf("Serve = %d, %v", code, err)
	}
	if out.Len() != 0 {
		t.Errorf("stderr leaked to stdout: %q", out.String())
	}
	for _, want := range []string{`"line":"warming up"`, `"line":"half a line"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %s:\n%s", want, logs.String())
		}
	}
}

func TestServePassesExecOptions(t *testing.T) {
	ex := &fakeExecer{agent: func(context.Context, io.Reader, io.Writer, io.Writer) int { return 0 }}
	var raw bytes.Buffer
	_, err := Serve(context.Background(), ex, Options{ContainerID: "c", Cmd: []string{"codex", "app-server"},
		Env: []string{"A=1"}, WorkDir: "/workspace", User: "1000", Policy: acp.Policy{Mode: acp.ModeACP},
		Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &raw})
	if err != nil {
		t.Fatal(err)
	}
	o := ex.gotOpts
	if o.TTY || o.Detach || o.WorkDir != "/workspace" || o.User != "1000" || o.Env[0] != "A=1" ||
		strings.Join(o.Cmd, " ") != "codex app-server" || o.Stderr != &raw || o.Stdin == nil {
		t.Errorf("exec options %+v: want protocol mode (no TTY, attached) with the given command", o)
	}
}

func TestServeRejectsBadOptions(t *testing.T) {
	ex := &fakeExecer{}
	good := Options{ContainerID: "c", Cmd: []string{"a"}, Stdin: strings.NewReader(""), Stdout: io.Discard}
	tests := []struct {
		name   string
		mutate func(*Options)
		class  error
	}{
		{"no container", func(o *Options) { o.ContainerID = "" }, errdefs.ErrContainer},
		{"no command", func(o *Options) { o.Cmd = nil }, errdefs.ErrContainer},
		{"empty command", func(o *Options) { o.Cmd = []string{""} }, errdefs.ErrContainer},
		{"no stdin", func(o *Options) { o.Stdin = nil }, errdefs.ErrContainer},
		{"no stdout", func(o *Options) { o.Stdout = nil }, errdefs.ErrContainer},
		{"bad policy", func(o *Options) { o.Policy.Mode = acp.Mode(9) }, errdefs.ErrConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := good
			tc.mutate(&o)
			if _, err := Serve(context.Background(), ex, o); !errors.Is(err, tc.class) {
				t.Errorf("err = %v, want class %v", err, tc.class)
			}
		})
	}
}
