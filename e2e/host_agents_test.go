//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The built-in ACP agents through `podbot host --agent KIND` (no custom
// command, no --agent-mode), driven by the official TypeScript SDK client
// (acp-client.mjs), each in acpImage. Agents that can run offline answer a
// prompt from aimock on the host, reached through agent.model_endpoint;
// the others are tested as far as they go without their vendor's service.

// agentFixture is the aimock fixture of these tests: the prompt's reply,
// and a catch-all for the side requests agents make (titles, summaries).
const agentFixture = `{"fixtures": [
  {"match": {"userMessage": "podbot-e2e-text"}, "response": {"content": "podbot-e2e-text-reply"}},
  {"match": {}, "response": {"content": "podbot-e2e-side-reply"}}
]}`

// acpAgentSummary is the acp-client.mjs summary line, with the fields
// these tests read.
type acpAgentSummary struct {
	Initialized        bool `json:"initialized"`
	InitializeResponse struct {
		ProtocolVersion   json.RawMessage `json:"protocolVersion"`
		AgentInfo         json.RawMessage `json:"agentInfo"`
		AgentCapabilities json.RawMessage `json:"agentCapabilities"`
	} `json:"initializeResponse"`
	SessionID              string `json:"sessionId"`
	StopReason             string `json:"stopReason"`
	AgentText              string `json:"agentText"`
	Updates                int    `json:"updates"`
	ClientReceivedRequests []struct {
		Method string `json:"method"`
	} `json:"clientReceivedRequests"`
	StdoutClean bool            `json:"stdoutClean"`
	Stdout      json.RawMessage `json:"stdout"`
	ChildExit   struct {
		Code *int `json:"code"`
	} `json:"childExit"`
	Error json.RawMessage `json:"error"`
}

// agentCase is one built-in kind under test.
type agentCase struct {
	kind string
	// endpoint is the model endpoint path on aimock ("" for none), and
	// env the variables the client's environment adds (dummy keys).
	endpoint string
	env      []string
	// offline is false for an agent that cannot complete a prompt without
	// its vendor's service; why says what stops it.
	offline bool
	why     string
	// reply is the text the turn must stream.
	reply string
	// refusals: the agent asks for files and terminals during the turn,
	// so podbot's refusals must be logged.
	refusals bool
	// authMethod, when set, is the ACP authenticate method the client
	// calls (the agent then reads its key variable).
	authMethod string
	// openNetwork runs the sandbox with network.mode = "open": Node.js's
	// fetch sends even an http:// request through the proxy as a CONNECT
	// tunnel, and podbot's egress proxy admits only TLS inside a tunnel,
	// so these agents reach the plain-http mock only without the proxy.
	// (Their vendors' https endpoints go through the proxy as usual.)
	openNetwork bool
}

func agentCases() []agentCase {
	return []agentCase{
		{kind: "opencode", endpoint: "/v1", env: []string{"OPENAI_API_KEY=podbot-e2e-dummy"}, offline: true, reply: "podbot-e2e-text-reply"},
		{kind: "claude-acp", endpoint: "", env: []string{"ANTHROPIC_API_KEY=podbot-e2e-dummy"}, openNetwork: true, offline: true, reply: "podbot-e2e-text-reply"},
		{kind: "codex-acp", endpoint: "/v1", env: []string{"OPENAI_API_KEY=podbot-e2e-dummy"}, authMethod: "openai-api-key", offline: true, reply: "podbot-e2e-text-reply"},
		{kind: "gemini", endpoint: "", env: []string{"GEMINI_API_KEY=podbot-e2e-dummy"}, authMethod: "gemini-api-key", openNetwork: true, offline: true, reply: "podbot-e2e-text-reply"},
		{kind: "goose", endpoint: "/v1", offline: true, reply: "podbot-e2e-goose-reply", refusals: true},
		{kind: "droid", offline: false,
			why: "droid answers every prompt with \"Error: No access token available\" until it holds a Factory access token (FACTORY_API_KEY, checked by Factory's service), and has no model endpoint override"},
	}
}

// TestHostACPAgents runs every built-in ACP kind through podbot host.
func TestHostACPAgents(t *testing.T) {
	t.Parallel() // long, and touches only what it names (see forEachEngine)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	fixture := filepath.Join(t.TempDir(), "agents-fixture.json")
	if err := os.WriteFile(fixture, []byte(agentFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	port, aimockLog := startAimockLogged(t, ctx, fixture)
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ensureACPImage(t, e)
		gw := bridgeGateway(t, ctx, e)
		for _, c := range agentCases() {
			t.Run(c.kind, func(t *testing.T) {
				runAgentCase(t, ctx, e, c, fmt.Sprintf("http://%s:%s%s", gw, port, c.endpoint))
				if t.Failed() {
					t.Logf("aimock output:\n%s", tail(aimockLog(), 6000))
				}
			})
		}
	})
}

func runAgentCase(t *testing.T, ctx context.Context, e engineUnderTest, c agentCase, endpoint string) {
	ws := t.TempDir()
	if err := os.Chmod(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	giveToAgent(t, ws)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	agent := ""
	if c.offline {
		agent = fmt.Sprintf("[agent]\nmodel_endpoint = %s\nmodel = \"podbot-e2e-model\"\n", q(endpoint))
	}
	if c.openNetwork {
		agent += "[network]\nmode = \"open\"\n"
	}
	cfg := fmt.Sprintf(`image = %s
[workspace]
source = "host_mount"
host_path = %s
allowed_roots = [%s]
[creds]
copy_claude = false
copy_codex = false
%s`, q(acpImage), q(ws), q(ws), agent)
	s := newHostSession(t, e, "acp-"+c.kind, cfg, "--agent", c.kind)
	argv := []string{peerEnv(t, "PODBOT_E2E_NODE"), peerEnv(t, "PODBOT_E2E_ACP_CLIENT"),
		"--cwd", "/workspace", "--timeout-ms", "120000", "--prompt", "podbot-e2e-text"}
	if c.authMethod != "" {
		argv = append(argv, "--auth-method", c.authMethod)
	}
	argv = append(argv, "--")
	argv = append(argv, s.podbot...)
	_, out, stderr := runClient(t, ctx, c.env, argv...)
	var sum acpAgentSummary
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &sum); err != nil {
		t.Fatalf("acp-client printed no summary: %v\nstdout: %s\nstderr: %s", err, out, tail(stderr, 6000))
	}
	defer func() {
		if t.Failed() {
			t.Logf("summary: %s\nclient/podbot stderr:\n%s", strings.TrimSpace(out), tail(stderr, 8000))
		}
	}()
	if !sum.Initialized || len(sum.InitializeResponse.AgentCapabilities) == 0 || string(sum.InitializeResponse.ProtocolVersion) != "1" {
		t.Fatalf("%s did not initialize: %+v", c.kind, sum.InitializeResponse)
	}
	if !sum.StdoutClean {
		t.Errorf("podbot's stdout held more than protocol frames: %s", sum.Stdout)
	}
	// The ACP policy: the client advertised fs and terminal, podbot
	// removed them from initialize, and no agent request for them reached
	// the client.
	if !strings.Contains(stderr, "removed the client's host capabilities") {
		t.Errorf("podbot did not log masking the client's host capabilities")
	}
	if len(sum.ClientReceivedRequests) != 0 {
		t.Errorf("the client received agent requests %+v; podbot must answer them itself", sum.ClientReceivedRequests)
	}
	if c.offline {
		if sum.StopReason != "end_turn" || !strings.Contains(sum.AgentText, c.reply) || sum.Updates == 0 {
			t.Errorf("turn did not complete with the mock's reply: stopReason %q, %d updates, text %q, error %s",
				sum.StopReason, sum.Updates, sum.AgentText, sum.Error)
		}
		// Some agents take longer than the client's 10 s grace to exit
		// after stdin closes; the client then stops podbot with SIGTERM
		// (130). Either way the container must be gone.
		if code := sum.ChildExit.Code; code == nil || (*code != 0 && *code != 130) {
			t.Errorf("podbot host exit %s after the client closed stdin, want 0 (or 130 after SIGTERM)", exitString(code))
		}
	} else {
		// What can be tested offline: initialize, session/new, and a turn
		// that ends (with droid's own error text) instead of hanging.
		if sum.SessionID == "" || sum.StopReason == "" {
			t.Errorf("%s: session %q, stopReason %q, error %s; want a session and a turn that ends", c.kind, sum.SessionID, sum.StopReason, sum.Error)
		}
		t.Logf("%s: initialize only (%s); agentCapabilities %s; then session %q, stopReason %q, text %q, error %s",
			c.kind, c.why, sum.InitializeResponse.AgentCapabilities, sum.SessionID, sum.StopReason, tail(sum.AgentText, 300), sum.Error)
	}
	if c.refusals && (strings.Count(stderr, "refused an agent request") < 2 ||
		!strings.Contains(stderr, "fs/read_text_file") || !strings.Contains(stderr, "terminal/create")) {
		t.Errorf("the refusals of fs/read_text_file and terminal/create were not logged")
	}
	assertRemoved(t, ctx, e, s.name)
}

func exitString(code *int) string {
	if code == nil {
		return "none"
	}
	return fmt.Sprint(*code)
}
