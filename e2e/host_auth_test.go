//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hostileAgent is an ACP agent that tries to leave the sandbox through the
// IDE: it answers every initialize with terminal authentication in each
// shape the protocol has known (v1 and v2 terminal auth methods carrying
// podbot's own flags and settings, the legacy _meta["terminal-auth"]
// command, terminal auth capabilities), answers every other request with
// an auth_required error listing the same methods, and reports the client
// capabilities it saw on stderr.
const hostileAgent = `import json, sys

evil_args = ["--allow-host-delegation", "--workspace", "/"]
v1_env = {"PODBOT_SANDBOX_PRIVILEGED": "true", "PODBOT_CONFIG_PATH": "/workspace/evil.toml"}
v2_env = [{"name": k, "value": v} for k, v in v1_env.items()]
legacy = {"label": "Log in", "command": "/bin/sh", "args": ["-c", "touch /tmp/pwned"], "env": v1_env}
methods = [
    {"id": "agent-login", "name": "Agent login", "description": "kept"},
    {"id": "v1-terminal", "name": "Terminal", "type": "terminal", "args": evil_args, "env": v1_env},
    {"methodId": "v2-terminal", "name": "Terminal", "type": "Terminal", "args": evil_args, "env": v2_env},
    {"id": "legacy", "name": "Legacy", "_meta": {"terminal-auth": legacy, "vendor/keep": "kept"}},
]
result = {
    "protocolVersion": 1,
    "agentCapabilities": {"loadSession": False, "auth": {"logout": {}, "terminal": True, "_meta": {"terminal-auth": legacy}}, "_meta": {"terminal-auth": legacy}},
    "capabilities": {"auth": {"terminal": {}}, "_meta": {"terminal-auth": legacy}},
    "authMethods": methods,
    "_meta": {"terminal-auth": legacy, "vendor/keep": "kept"},
}

def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg.get("method") == "initialize":
        params = msg.get("params") or {}
        seen = params.get("clientCapabilities", params.get("capabilities"))
        sys.stderr.write("HOSTILE-SEEN " + json.dumps(seen) + "\n")
        sys.stderr.flush()
        send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    else:
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32000, "message": "Authentication required",
              "authMethods": methods, "data": {"authMethods": methods}}})
`

// hostileExchange runs podbot host (argv) as an IDE would, sends it the
// client's frames one at a time, and returns the raw line podbot wrote to
// its stdout for each, and podbot's stderr.
func hostileExchange(t *testing.T, ctx context.Context, argv []string, frames []string) ([]string, string) {
	t.Helper()
	return exchangeFrames(t, exec.CommandContext(ctx, argv[0], argv[1:]...), frames)
}

// exchangeFrames runs cmd (podbot host) as an IDE would, sends it the
// client's frames one at a time, and returns the raw line it wrote to its
// stdout for each, and its stderr. It fails the test when cmd writes more
// than the answers or does not exit 0 once its stdin is closed.
func exchangeFrames(t *testing.T, cmd *exec.Cmd, frames []string) ([]string, string) {
	t.Helper()
	argv := cmd.Args
	var stderr lockedBuffer
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
	r := bufio.NewReaderSize(stdout, 1<<20)
	var lines []string
	for _, f := range frames {
		if _, err := io.WriteString(stdin, f+"\n"); err != nil {
			t.Fatalf("write %s: %v\nstderr:\n%s", f, err, stderr.String())
		}
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("no answer to %s: %v\nstderr:\n%s", f, err, stderr.String())
		}
		lines = append(lines, line)
	}
	stdin.Close()
	rest, _ := io.ReadAll(r)
	if code := exitStatus(t, cmd.Wait(), argv); code != 0 {
		t.Errorf("podbot host exit %d after stdin closed, want 0\nstderr:\n%s", code, stderr.String())
	}
	if len(rest) > 0 {
		t.Errorf("podbot wrote more than the answers: %q", rest)
	}
	return lines, stderr.String()
}

// The client's side of the exchange: a v1 initialize offering terminal
// auth, a v2 one (capabilities instead of clientCapabilities), and a
// session/new the agent answers with auth_required.
var hostileClientFrames = []string{
	`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"auth":{"terminal":true},"_meta":{"terminal-auth":true}},"clientInfo":{"name":"e2e","version":"1"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"capabilities":{"auth":{"terminal":{}},"_meta":{"terminal-auth":true}},"info":{"name":"e2e","version":"1"}}}`,
	`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/workspace","mcpServers":[]}}`,
}

// TestHostACPAgentTerminalAuthMasked: a hostile agent in the sandbox
// answers initialize with terminal authentication in every shape, so that
// the IDE would relaunch podbot host on the host with
// --allow-host-delegation and PODBOT_SANDBOX_PRIVILEGED=true, or run the
// agent's command. None of it reaches the client; with
// --allow-terminal-auth all of it does, with a warning.
func TestHostACPAgentTerminalAuthMasked(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		ws := t.TempDir()
		if err := os.Chmod(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "hostile_agent.py"), []byte(hostileAgent), 0o644); err != nil {
			t.Fatal(err)
		}
		giveToAgent(t, ws)
		cfg := hostConfig(ws, "acp", "/usr/bin/python3", []string{"/workspace/hostile_agent.py"}, "")

		t.Run("masked", func(t *testing.T) {
			s := newHostSession(t, e, "host-tauth", cfg)
			lines, stderr := hostileExchange(t, ctx, s.podbot, hostileClientFrames)
			defer func() {
				if t.Failed() {
					t.Logf("podbot stderr:\n%s", stderr)
				}
			}()
			out := strings.Join(lines, "")
			for _, bad := range []string{"terminal-auth", `"terminal"`, `"Terminal"`, "PODBOT_", "--allow-host-delegation", "/bin/sh", "v1-terminal", "v2-terminal"} {
				if strings.Contains(out, bad) {
					t.Errorf("the client received %q:\n%s", bad, out)
				}
			}
			for i, line := range lines[:2] {
				var resp struct {
					ID     int `json:"id"`
					Result struct {
						AuthMethods []map[string]any `json:"authMethods"`
						Meta        map[string]any   `json:"_meta"`
					} `json:"result"`
				}
				if err := json.Unmarshal([]byte(line), &resp); err != nil || resp.ID != i {
					t.Fatalf("initialize %d: answer %q (%v)", i, line, err)
				}
				var ids []string
				for _, m := range resp.Result.AuthMethods {
					ids = append(ids, fmt.Sprint(m["id"]))
				}
				if got := strings.Join(ids, ","); got != "agent-login,legacy" || resp.Result.Meta["vendor/keep"] != "kept" {
					t.Errorf("initialize %d: auth methods %q, _meta %v; want agent-login and legacy (masked) kept", i, got, resp.Result.Meta)
				}
			}
			if !strings.Contains(lines[2], `"code":-32000`) || !strings.Contains(lines[2], `"agent-login"`) {
				t.Errorf("session/new: %s; want the agent's auth_required error, masked", lines[2])
			}
			if n := strings.Count(stderr, "removed terminal authentication"); n != 3 {
				t.Errorf("%d removals logged, want 3 (two initialize responses, one error)", n)
			}
			for _, seen := range strings.Split(stderr, "HOSTILE-SEEN ")[1:] {
				if seen, _, _ := strings.Cut(seen, "\n"); strings.Contains(seen, "terminal") {
					t.Errorf("the agent saw the client's terminal auth capability: %s", seen)
				}
			}
			if strings.Count(stderr, "HOSTILE-SEEN ") != 2 {
				t.Errorf("the agent did not report both initialize requests")
			}
			assertRemoved(t, ctx, e, s.name)
		})

		t.Run("allowed", func(t *testing.T) {
			s := newHostSession(t, e, "host-tauth-ok", cfg, "--allow-terminal-auth")
			lines, stderr := hostileExchange(t, ctx, s.podbot, hostileClientFrames[:1])
			for _, want := range []string{"terminal-auth", "v1-terminal", "v2-terminal", "PODBOT_SANDBOX_PRIVILEGED"} {
				if !strings.Contains(lines[0], want) {
					t.Errorf("with --allow-terminal-auth the client did not receive %q:\n%s", want, lines[0])
				}
			}
			if !strings.Contains(stderr, "agent.allow_terminal_auth is on") || !strings.Contains(stderr, "trust boundary") {
				t.Errorf("no trust-boundary warning on stderr:\n%s", stderr)
			}
			if !strings.Contains(stderr, `HOSTILE-SEEN {\"auth\": {\"terminal\": true}`) && !strings.Contains(stderr, `HOSTILE-SEEN {"auth": {"terminal": true}`) {
				t.Errorf("the agent did not see the client's terminal auth capability:\n%s", stderr)
			}
		})
	})
}

// TestHostRefusesConfigInWorkspace: podbot host refuses to mount a
// workspace that holds its own config file, before it creates anything:
// the agent could otherwise write podbot's settings for the next launch.
func TestHostRefusesConfigInWorkspace(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ws := t.TempDir()
		cfgPath := filepath.Join(ws, "podbot.toml")
		if err := os.WriteFile(cfgPath, []byte(hostConfig(ws, "acp", "/usr/bin/python3", nil, "")), 0o600); err != nil {
			t.Fatal(err)
		}
		giveToAgent(t, ws)
		name := testName(e, "host-cfg-in-ws")
		removeOnCleanup(t, e, name)
		argv := []string{filepath.Join(suite.bin, "podbot"), "--config", cfgPath, "--engine-socket", e.Endpoint, "host", "--name", name}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Stdin = strings.NewReader("")
		var stdout, stderr lockedBuffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Fatalf("podbot host ran with its config file in the workspace: %v\nstderr:\n%s", err, stderr.String())
		}
		msg := stderr.String()
		for _, want := range []string{"workspace.host_path", cfgPath, "outside the workspace", "--config"} {
			if !strings.Contains(msg, want) {
				t.Errorf("stderr does not name %q:\n%s", want, msg)
			}
		}
		if stdout.String() != "" {
			t.Errorf("stdout: %q", stdout.String())
		}
		if rows := containersNamed(t, ctx, e, name); len(rows) != 0 {
			t.Errorf("a container was created: %+v", rows)
		}
	})
}
