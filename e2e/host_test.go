//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// The podbot host tests put the real peers' agents in the sandbox through a
// host-mount workspace: the host's node (dynamically linked, the sandbox
// image is the same Debian), the bundled TypeScript SDK agent, the Go SDK's
// example agent (built statically) and Codex's static binary are placed in a
// temporary directory that the sandbox mounts at /workspace. The agent then
// runs as a custom agent (agent.kind = custom), with agent.command naming
// the file under /workspace. The codex kind's built-in command
// (`codex app-server --listen stdio://`) needs codex on the image's PATH, so
// the Codex test runs the same command as a custom agent instead.

// peerEnv returns a variable set by `scripts/peers.sh env`, failing the test
// when it is missing.
func peerEnv(t *testing.T, key string) string {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		t.Fatalf("%s not set: run `source <(scripts/peers.sh env)` (and `scripts/peers.sh bundle`) first", key)
	}
	return v
}

// hostWorkspace makes a host-mount workspace holding the named files
// (workspace name → host path), hard-linked where possible, and readable by
// any user.
func hostWorkspace(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range files {
		dst := filepath.Join(dir, name)
		if err := os.Link(src, dst); err != nil {
			copyFile(t, src, dst)
		}
	}
	giveToAgent(t, dir)
	return dir
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// hostConfig is a podbot config hosting a custom agent from workspace ws.
func hostConfig(ws, mode, command string, args []string, extra string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = q(a)
	}
	return fmt.Sprintf(`image = %s
[workspace]
source = "host_mount"
host_path = %s
allowed_roots = [%s]
[creds]
copy_claude = false
copy_codex = false
[agent]
kind = "custom"
mode = %s
command = %s
args = [%s]
%s`, q(sandboxImage), q(ws), q(ws), q(mode), q(command), strings.Join(quoted, ", "), extra)
}

// hostSession is one `podbot host` run driven by a peer client.
type hostSession struct {
	name   string   // container name
	cfg    string   // config file path
	podbot []string // the podbot host command line
}

// newHostSession writes cfgTOML and prepares a podbot host command line for
// engine e whose container is removed at cleanup whatever happens.
func newHostSession(t *testing.T, e engineUnderTest, purpose, cfgTOML string, flags ...string) hostSession {
	t.Helper()
	name := testName(e, purpose)
	removeOnCleanup(t, e, name)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte(cfgTOML), 0o600); err != nil {
		t.Fatal(err)
	}
	argv := []string{filepath.Join(suite.bin, "podbot"), "--config", cfg, "--engine-socket", e.Endpoint, "host", "--name", name}
	return hostSession{name: name, cfg: cfg, podbot: append(argv, flags...)}
}

// runClient runs a peer client (argv) that spawns podbot host, with env
// added to the environment, and returns its stdout and stderr.
func runClient(t *testing.T, ctx context.Context, env []string, argv ...string) (int, string, string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	code := exitStatus(t, cmd.Run(), argv)
	return code, out.String(), errOut.String()
}

// assertRemoved checks that podbot removed its container on exit.
func assertRemoved(t *testing.T, ctx context.Context, e engineUnderTest, name string) {
	t.Helper()
	if rows := containersNamed(t, ctx, e, name); len(rows) != 0 {
		t.Errorf("container %s still exists after podbot host exited (state %s)", name, rows[0].State)
	}
}

// acpClientSummary is the acp-client.mjs summary line.
type acpClientSummary struct {
	Initialized bool   `json:"initialized"`
	StopReason  string `json:"stopReason"`
	AgentReport *struct {
		CapabilitiesSeen map[string]json.RawMessage `json:"capabilitiesSeen"`
		InitializeMeta   map[string]any             `json:"initializeMeta"`
		FsError          *rpcError                  `json:"fsError"`
		TerminalError    *rpcError                  `json:"terminalError"`
		FsResult         json.RawMessage            `json:"fsResult"`
		TerminalResult   json.RawMessage            `json:"terminalResult"`
	} `json:"agentReport"`
	ClientReceivedRequests []struct {
		Method string `json:"method"`
	} `json:"clientReceivedRequests"`
	StdoutClean bool            `json:"stdoutClean"`
	Stdout      json.RawMessage `json:"stdout"`
	ChildExit   struct {
		Code *int `json:"code"`
	} `json:"childExit"`
	Error any `json:"error"`
}

type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

// acpBundleWorkspace holds node and the bundled TypeScript SDK agent.
func acpBundleWorkspace(t *testing.T) string {
	t.Helper()
	return hostWorkspace(t, map[string]string{
		"node":                 peerEnv(t, "PODBOT_E2E_NODE"),
		"acp-agent.bundle.mjs": peerEnv(t, "PODBOT_E2E_ACP_AGENT_BUNDLE"),
	})
}

func runACPClient(t *testing.T, ctx context.Context, s hostSession) (acpClientSummary, string) {
	t.Helper()
	argv := append([]string{peerEnv(t, "PODBOT_E2E_NODE"), peerEnv(t, "PODBOT_E2E_ACP_CLIENT"), "--cwd", "/workspace", "--"}, s.podbot...)
	_, out, errOut := runClient(t, ctx, nil, argv...)
	var sum acpClientSummary
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &sum); err != nil {
		t.Fatalf("acp-client printed no summary: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	return sum, errOut
}

// TestHostACPMasksAndRefuses: the TypeScript SDK client, advertising every
// host capability, talks through podbot host to the TypeScript SDK agent in
// the sandbox.
func TestHostACPMasksAndRefuses(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		ws := acpBundleWorkspace(t)
		s := newHostSession(t, e, "host-acp", hostConfig(ws, "acp", "/workspace/node", []string{"/workspace/acp-agent.bundle.mjs"}, ""))
		sum, stderr := runACPClient(t, ctx, s)
		defer func() {
			if t.Failed() {
				t.Logf("client/podbot stderr:\n%s", stderr)
			}
		}()
		if !sum.Initialized || sum.StopReason != "end_turn" || sum.Error != nil {
			t.Errorf("session did not complete: initialized %v, stopReason %q, error %v", sum.Initialized, sum.StopReason, sum.Error)
		}
		if !sum.StdoutClean {
			t.Errorf("podbot's stdout held more than protocol frames: %s", sum.Stdout)
		}
		if len(sum.ClientReceivedRequests) != 0 {
			t.Errorf("the client received agent requests %+v; podbot must answer them itself", sum.ClientReceivedRequests)
		}
		if sum.ChildExit.Code == nil || *sum.ChildExit.Code != 0 {
			t.Errorf("podbot host exit %v after the client closed stdin, want 0", sum.ChildExit.Code)
		}
		r := sum.AgentReport
		if r == nil {
			t.Fatal("the agent sent no report")
		}
		caps := r.CapabilitiesSeen
		for _, k := range []string{"fs", "terminal"} {
			if v, ok := caps[k]; ok {
				t.Errorf("agent saw clientCapabilities.%s = %s", k, v)
			}
		}
		var auth map[string]json.RawMessage
		_ = json.Unmarshal(caps["auth"], &auth)
		if _, ok := auth["terminal"]; ok {
			t.Errorf("agent saw clientCapabilities.auth.terminal: %s", caps["auth"])
		}
		var meta map[string]json.RawMessage
		_ = json.Unmarshal(caps["_meta"], &meta)
		if _, ok := meta["terminal-auth"]; ok {
			t.Errorf("agent saw _meta[\"terminal-auth\"]: %s", caps["_meta"])
		}
		if string(meta["podbot.e2e/keep"]) != `"kept"` || r.InitializeMeta["podbot.e2e/initialize"] != "kept" {
			t.Errorf("other _meta was not kept: capabilities %s, initialize _meta %v", caps["_meta"], r.InitializeMeta)
		}
		for method, e := range map[string]*rpcError{"fs/read_text_file": r.FsError, "terminal/create": r.TerminalError} {
			if e == nil || e.Code != -32601 || e.Data["method"] != method || !strings.Contains(e.Message, method) {
				t.Errorf("%s: agent got %+v, want a -32601 refusal naming the method", method, e)
			}
		}
		if !strings.Contains(stderr, "refused an agent request") {
			t.Errorf("refusals were not logged on stderr:\n%s", stderr)
		}
		assertRemoved(t, ctx, e, s.name)
	})
}

// TestHostACPDelegationWarns: --allow-host-delegation forwards everything
// and says so on stderr.
func TestHostACPDelegationWarns(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		ws := acpBundleWorkspace(t)
		s := newHostSession(t, e, "host-deleg", hostConfig(ws, "acp", "/workspace/node", []string{"/workspace/acp-agent.bundle.mjs"}, ""),
			"--allow-host-delegation")
		sum, stderr := runACPClient(t, ctx, s)
		var methods []string
		for _, r := range sum.ClientReceivedRequests {
			methods = append(methods, r.Method)
		}
		if got := strings.Join(methods, ","); got != "fs/read_text_file,terminal/create" {
			t.Errorf("client received %q, want both delegated requests", got)
		}
		if sum.AgentReport == nil || sum.AgentReport.CapabilitiesSeen["fs"] == nil {
			t.Errorf("agent did not see the fs capability with delegation on")
		}
		if !sum.StdoutClean || sum.StopReason != "end_turn" {
			t.Errorf("stdoutClean %v, stopReason %q", sum.StdoutClean, sum.StopReason)
		}
		if !strings.Contains(stderr, "trust boundary") {
			t.Errorf("no trust-boundary warning on stderr:\n%s", stderr)
		}
	})
}

// goSDKClient is an ACP client written with the Go SDK. It advertises the
// host capabilities, grants the first permission option and records
// everything the agent asks of it.
type goSDKClient struct {
	mu       sync.Mutex
	text     strings.Builder
	requests []string
}

func (c *goSDKClient) record(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = append(c.requests, method)
}

func (c *goSDKClient) RequestPermission(_ context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	c.record("session/request_permission")
	if len(p.Options) == 0 {
		return acpsdk.RequestPermissionResponse{}, fmt.Errorf("no permission options")
	}
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{
		Selected: &acpsdk.RequestPermissionOutcomeSelected{OptionId: p.Options[0].OptionId}}}, nil
}

func (c *goSDKClient) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	if m := n.Update.AgentMessageChunk; m != nil && m.Content.Text != nil {
		c.mu.Lock()
		c.text.WriteString(m.Content.Text.Text)
		c.mu.Unlock()
	}
	return nil
}

var errHostOnly = fmt.Errorf("this test client never acts on its host")

func (c *goSDKClient) ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	c.record("fs/read_text_file")
	return acpsdk.ReadTextFileResponse{}, errHostOnly
}

func (c *goSDKClient) WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	c.record("fs/write_text_file")
	return acpsdk.WriteTextFileResponse{}, errHostOnly
}

func (c *goSDKClient) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	c.record("terminal/create")
	return acpsdk.CreateTerminalResponse{}, errHostOnly
}

func (c *goSDKClient) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	c.record("terminal/kill")
	return acpsdk.KillTerminalResponse{}, errHostOnly
}

func (c *goSDKClient) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	c.record("terminal/output")
	return acpsdk.TerminalOutputResponse{}, errHostOnly
}

func (c *goSDKClient) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	c.record("terminal/release")
	return acpsdk.ReleaseTerminalResponse{}, errHostOnly
}

func (c *goSDKClient) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	c.record("terminal/wait_for_exit")
	return acpsdk.WaitForTerminalExitResponse{}, errHostOnly
}

// buildGoSDKExample builds one of the Go SDK's examples into dir.
func buildGoSDKExample(t *testing.T, ctx context.Context, example, dst string, static bool) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dst, "github.com/coder/acp-go-sdk/example/"+example)
	cmd.Env = os.Environ()
	if static {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the Go SDK example %s: %v\n%s", example, err, out)
	}
}

// TestHostGoSDK: the Go SDK's example agent, in the sandbox, completes a
// session through podbot host with a Go SDK client, and with the SDK's own
// example client.
func TestHostGoSDK(t *testing.T) {
	t.Parallel() // long, and touches only what it names (see forEachEngine)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := t.TempDir()
	buildGoSDKExample(t, ctx, "agent", filepath.Join(bin, "acp-go-agent"), true)
	buildGoSDKExample(t, ctx, "client", filepath.Join(bin, "acp-go-client"), false)
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ws := hostWorkspace(t, map[string]string{"acp-go-agent": filepath.Join(bin, "acp-go-agent")})
		cfg := hostConfig(ws, "acp", "/workspace/acp-go-agent", nil, "")

		t.Run("sdk client", func(t *testing.T) {
			s := newHostSession(t, e, "host-gosdk", cfg)
			cmd := exec.CommandContext(ctx, s.podbot[0], s.podbot[1:]...)
			var stdoutCopy, stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if t.Failed() {
					t.Logf("podbot stderr:\n%s", stderr.String())
				}
			}()
			client := &goSDKClient{}
			conn := acpsdk.NewClientSideConnection(client, stdin, io.TeeReader(stdout, &stdoutCopy))
			conn.SetLogger(slog.New(slog.DiscardHandler))
			init, err := conn.Initialize(ctx, acpsdk.InitializeRequest{
				ProtocolVersion: acpsdk.ProtocolVersionNumber,
				ClientCapabilities: acpsdk.ClientCapabilities{
					Fs:       acpsdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true},
					Terminal: true,
				},
			})
			if err != nil {
				t.Fatalf("initialize: %v", err)
			}
			sess, err := conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: "/workspace", McpServers: []acpsdk.McpServer{}})
			if err != nil {
				t.Fatalf("session/new: %v", err)
			}
			resp, err := conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: sess.SessionId,
				Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("Hello, agent!")}})
			if err != nil {
				t.Fatalf("session/prompt: %v", err)
			}
			stdin.Close()
			code := exitStatus(t, cmd.Wait(), s.podbot)
			if code != 0 {
				t.Errorf("podbot host exit %d after stdin closed, want 0", code)
			}
			if resp.StopReason != acpsdk.StopReasonEndTurn {
				t.Errorf("stop reason %q, want end_turn", resp.StopReason)
			}
			client.mu.Lock()
			text, reqs := client.text.String(), strings.Join(client.requests, ",")
			client.mu.Unlock()
			if reqs != "session/request_permission" || !strings.Contains(text, "successfully updated the configuration") {
				t.Errorf("agent asked %q and said %q; want one permission request and the allowed change", reqs, text)
			}
			if init.ProtocolVersion != acpsdk.ProtocolVersionNumber {
				t.Errorf("protocol version %v", init.ProtocolVersion)
			}
			assertFramesOnly(t, stdoutCopy.Bytes())
			assertRemoved(t, ctx, e, s.name)
		})

		t.Run("example client", func(t *testing.T) {
			// The example client asks for the permission choice on its
			// stdin, and kills the agent command (podbot) when done, so
			// the container is left to the test's cleanup.
			s := newHostSession(t, e, "host-goex", cfg)
			cmd := exec.CommandContext(ctx, filepath.Join(bin, "acp-go-client"), s.podbot...)
			cmd.Stdin = strings.NewReader("1\n")
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Run(); err != nil {
				t.Fatalf("example client: %v\nstdout: %s\nstderr: %s", err, out.String(), errOut.String())
			}
			for _, want := range []string{"Connected to agent", "Created session", "Agent completed", "successfully updated the configuration"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("example client output lacks %q:\n%s\nstderr: %s", want, out.String(), errOut.String())
				}
			}
		})
	})
}

// assertFramesOnly checks that every line of out is a JSON-RPC 2.0 object.
func assertFramesOnly(t *testing.T, out []byte) {
	t.Helper()
	if len(out) == 0 {
		t.Error("podbot wrote no frames")
	}
	for i, line := range bytes.SplitAfter(out, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if !bytes.HasSuffix(line, []byte("\n")) || json.Unmarshal(line, &m) != nil || m.JSONRPC != "2.0" {
			t.Errorf("stdout line %d is not a JSON-RPC frame: %q", i+1, line)
		}
	}
}

// startAimock runs the mock OpenAI-compatible provider on every address and
// returns its port.
func startAimock(t *testing.T, ctx context.Context) string {
	t.Helper()
	return startAimockWith(t, ctx, peerEnv(t, "PODBOT_E2E_AIMOCK_FIXTURE"), "--strict")
}

// startAimockWith runs aimock with a fixture file and extra flags and
// returns its port.
func startAimockWith(t *testing.T, ctx context.Context, fixture string, flags ...string) string {
	t.Helper()
	port, _ := startAimockLogged(t, ctx, fixture, flags...)
	return port
}

// startAimockLogged is startAimockWith that also returns aimock's output
// so far (bounded to its last 64 KiB), for failure reports.
func startAimockLogged(t *testing.T, ctx context.Context, fixture string, flags ...string) (string, func() string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, peerEnv(t, "PODBOT_E2E_NODE"), append([]string{peerEnv(t, "PODBOT_E2E_AIMOCK"),
		"--host", "0.0.0.0", "--port", "0", "--fixtures", fixture}, flags...)...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		pw.Close()
	})
	var mu sync.Mutex
	var logBuf []byte
	port := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`listening on http://[0-9.]+:([0-9]+)`)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			mu.Lock()
			logBuf = append(logBuf, sc.Text()+"\n"...)
			if len(logBuf) > 64<<10 {
				logBuf = logBuf[len(logBuf)-64<<10:]
			}
			mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case port <- m[1]:
				default:
				}
			}
		}
	}()
	logs := func() string {
		mu.Lock()
		defer mu.Unlock()
		return string(logBuf)
	}
	select {
	case p := <-port:
		return p, logs
	case <-time.After(30 * time.Second):
		t.Fatal("aimock did not report its address")
	}
	return "", logs
}

// codexSummary is the codex-app-server-client.mjs summary line.
type codexSummary struct {
	Initialized   bool     `json:"initialized"`
	ThreadID      string   `json:"threadId"`
	TurnStatus    string   `json:"turnStatus"`
	ToolCalled    bool     `json:"toolCalled"`
	AgentMessages []string `json:"agentMessages"`
	StdoutClean   bool     `json:"stdoutClean"`
	ChildExit     struct {
		Code *int `json:"code"`
	} `json:"childExit"`
	Error any `json:"error"`
}

// TestHostCodexAppServer: Codex's app server runs in the sandbox against
// aimock on the host and completes initialize, thread/start and turn/start
// with one tool call through podbot host.
func TestHostCodexAppServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	port := startAimock(t, ctx)
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ws := hostWorkspace(t, map[string]string{"codex": peerEnv(t, "PODBOT_E2E_CODEX_BIN")})
		home := filepath.Join(ws, "codex-home")
		if err := os.Mkdir(home, 0o777); err != nil {
			t.Fatal(err)
		}
		url := fmt.Sprintf("http://%s:%s/v1", bridgeGateway(t, ctx, e), port)
		toml, err := exec.CommandContext(ctx, "../scripts/peers.sh", "codex-config", url).Output()
		if err != nil {
			t.Fatalf("peers.sh codex-config: %v", err)
		}
		if err := os.WriteFile(filepath.Join(home, "config.toml"), toml, 0o644); err != nil {
			t.Fatal(err)
		}
		giveToAgent(t, home)
		// The default egress policy with aimock allowed by an explicit rule
		// (its address is private, so the rule names it exactly).
		cfg := hostConfig(ws, "codex_app_server", "/workspace/codex", []string{"app-server", "--listen", "stdio://"},
			fmt.Sprintf("env_allowlist = [\"CODEX_HOME\", \"AIMOCK_API_KEY\"]\n[network]\nallow = [\"%s:%s\"]\n", bridgeGateway(t, ctx, e), port))
		s := newHostSession(t, e, "host-codex", cfg)
		argv := append([]string{peerEnv(t, "PODBOT_E2E_NODE"), peerEnv(t, "PODBOT_E2E_CODEX_CLIENT"),
			"--prompt", "podbot-e2e-tool-call", "--timeout-ms", "120000", "--"}, s.podbot...)
		_, out, stderr := runClient(t, ctx, []string{"CODEX_HOME=/workspace/codex-home", "AIMOCK_API_KEY=dummy"}, argv...)
		var sum codexSummary
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &sum); err != nil {
			t.Fatalf("codex client printed no summary: %v\nstdout: %s\nstderr: %s", err, out, stderr)
		}
		done := false
		for _, m := range sum.AgentMessages {
			done = done || strings.HasPrefix(m, "podbot-e2e-done")
		}
		if !sum.Initialized || sum.ThreadID == "" || sum.TurnStatus != "completed" || !sum.ToolCalled || !done || sum.Error != nil {
			t.Errorf("turn did not complete with a tool call: %s\nstderr:\n%s", out, stderr)
		}
		if !sum.StdoutClean {
			t.Errorf("podbot's stdout held more than protocol frames: %s", out)
		}
		if sum.ChildExit.Code == nil || *sum.ChildExit.Code != 0 {
			t.Errorf("podbot host exit %v after the client closed stdin, want 0", sum.ChildExit.Code)
		}
		assertRemoved(t, ctx, e, s.name)
	})
}

// TestHostStartFailureWritesNothing: a launch that fails (missing image)
// exits non-zero with the reason on stderr and nothing on stdout.
func TestHostStartFailureWritesNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		ws := acpBundleWorkspace(t)
		cfg := strings.Replace(hostConfig(ws, "acp", "/workspace/node", []string{"/workspace/acp-agent.bundle.mjs"}, ""),
			sandboxImage, "localhost/podbot-e2e-no-such-image:absent", 1)
		s := newHostSession(t, e, "host-noimg", cfg)
		cmd := exec.CommandContext(ctx, s.podbot[0], s.podbot[1:]...)
		cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		code := exitStatus(t, cmd.Run(), s.podbot)
		if code == 0 {
			t.Errorf("podbot host with a missing image exited 0")
		}
		if out.Len() != 0 {
			t.Errorf("stdout held %q on a failed start; it must stay empty", out.String())
		}
		if !strings.Contains(errOut.String(), "podbot-e2e-no-such-image") {
			t.Errorf("stderr does not name the image:\n%s", errOut.String())
		}
		assertRemoved(t, ctx, e, s.name)
	})
}

// TestHostSignalCleansUp: SIGTERM while hosting stops the agent and
// removes the container; stdout stays empty.
func TestHostSignalCleansUp(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		ws := acpBundleWorkspace(t)
		s := newHostSession(t, e, "host-sigterm", hostConfig(ws, "acp", "/workspace/node", []string{"/workspace/acp-agent.bundle.mjs"}, ""))
		cmd := exec.CommandContext(ctx, s.podbot[0], s.podbot[1:]...)
		stdin, err := cmd.StdinPipe() // held open: the IDE is still there
		if err != nil {
			t.Fatal(err)
		}
		defer stdin.Close()
		var out bytes.Buffer
		errOut := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = &out, errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(90 * time.Second)
		for !strings.Contains(errOut.String(), "hosting agent") {
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				t.Fatalf("podbot host never started the agent:\n%s", errOut.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		if rows := withoutProxies(containersNamed(t, ctx, e, s.name)); len(rows) != 1 || rows[0].State != "running" {
			t.Fatalf("want the hosting container running, got %+v", rows)
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		code := exitStatus(t, cmd.Wait(), s.podbot)
		if code != 130 {
			t.Errorf("exit %d after SIGTERM, want 130 (interrupted)", code)
		}
		if out.Len() != 0 {
			t.Errorf("stdout held %q; no frame was exchanged", out.String())
		}
		assertRemoved(t, ctx, e, s.name)
	})
}

// TestHostClientGoneCleansUp: when the IDE goes away (its end of podbot's
// stdout closed), podbot stops with an error instead of dying on SIGPIPE,
// and removes the container.
func TestHostClientGoneCleansUp(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		ws := acpBundleWorkspace(t)
		s := newHostSession(t, e, "host-gone", hostConfig(ws, "acp", "/workspace/node", []string{"/workspace/acp-agent.bundle.mjs"}, ""))
		cmd := exec.CommandContext(ctx, s.podbot[0], s.podbot[1:]...)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		defer stdin.Close()
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		errOut := &lockedBuffer{}
		cmd.Stderr = errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		io.WriteString(stdin, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`+"\n")
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil || !strings.Contains(line, `"id":0`) {
			t.Fatalf("no initialize answer: %q, %v\n%s", line, err, errOut.String())
		}
		stdout.Close() // the IDE is gone
		io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/workspace","mcpServers":[]}}`+"\n")
		err = cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
			t.Errorf("podbot host exited 0 after losing its client")
		case !errors.As(err, &ee) || ee.ExitCode() < 0:
			t.Errorf("podbot host did not exit with a status (killed by a signal?): %v", err)
		}
		if !strings.Contains(errOut.String(), "writing to the client") {
			t.Errorf("stderr does not say the client went away:\n%s", errOut.String())
		}
		assertRemoved(t, ctx, e, s.name)
	})
}
