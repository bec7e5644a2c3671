package acp

import (
	"encoding/json"
	"strings"
	"testing"
)

func refusal(id, method string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"` + method +
		` is refused by podbot's sandbox policy: the agent runs in a sandbox and may not use the client's host files, terminals or MCP servers (set agent.allow_host_delegation to allow it)","data":{"method":"` +
		method + `"}}}`
}

func TestAgentRequestsRefused(t *testing.T) {
	tests := []struct {
		name, in, wantAgent string
	}{
		{"number id", `{"jsonrpc":"2.0","id":3,"method":"fs/read_text_file","params":{"path":"/etc/passwd"}}` + "\n", refusal("3", "fs/read_text_file") + "\n"},
		{"string id", `{"jsonrpc":"2.0","id":"req-é\u00e9","method":"terminal/create","params":{}}` + "\n", refusal(`"req-é\u00e9"`, "terminal/create") + "\n"},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"fs/write_text_file"}` + "\n", refusal("null", "fs/write_text_file") + "\n"},
		{"id bytes kept exactly", `{"jsonrpc":"2.0","id":1.50e+3,"method":"mcp/connect"}` + "\n", refusal("1.50e+3", "mcp/connect") + "\n"},
		{"big number id kept exactly", `{"id":123456789012345678901234567890,"method":"mcp/message","jsonrpc":"2.0"}` + "\n", refusal("123456789012345678901234567890", "mcp/message") + "\n"},
		{"CRLF answered with CRLF", `{"jsonrpc":"2.0","id":4,"method":"terminal/output"}` + "\r\n", refusal("4", "terminal/output") + "\r\n"},
		{"upper-case method", `{"jsonrpc":"2.0","id":5,"method":"FS/read_text_file"}` + "\n", refusal("5", "FS/read_text_file") + "\n"},
		{"upper-case member name", `{"jsonrpc":"2.0","ID":6,"Method":"fs/read_text_file"}` + "\n", refusal("6", "fs/read_text_file") + "\n"},
		{"escaped method", `{"jsonrpc":"2.0","id":7,"method":"f\u0073\/read_text_file"}` + "\n", refusal("7", "fs/read_text_file") + "\n"},
		{"notification dropped", `{"jsonrpc":"2.0","method":"terminal/kill","params":{}}` + "\n", ""},
		{"last frame without newline", `{"jsonrpc":"2.0","id":8,"method":"fs/x"}`, refusal("8", "fs/x") + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			toAgent, toClient := runPumps(t, Policy{}, nil, []byte(tt.in), nil)
			if toClient != "" {
				t.Errorf("client got %q, want nothing", toClient)
			}
			if toAgent != tt.wantAgent {
				t.Errorf("agent got\n%s\nwant\n%s", toAgent, tt.wantAgent)
			}
			if toAgent != "" && !json.Valid([]byte(toAgent)) {
				t.Errorf("answer is not valid JSON: %s", toAgent)
			}
		})
	}
}

func TestRefusalsAreLogged(t *testing.T) {
	log, buf := logCapture()
	runPumps(t, Policy{Logger: log}, nil, []byte(`{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file"}`+"\n"), nil)
	if !strings.Contains(buf.String(), "method=fs/read_text_file") {
		t.Fatalf("log %q does not name the refused method", buf.String())
	}
}

func TestLongMethodIsClipped(t *testing.T) {
	method := "fs/" + strings.Repeat("é", 1000)
	in := `{"jsonrpc":"2.0","id":1,"method":"` + method + `"}` + "\n"
	toAgent, _ := runPumps(t, Policy{}, nil, []byte(in), nil)
	if len(toAgent) > 2*maxMethodEcho+512 || !json.Valid([]byte(toAgent)) {
		t.Fatalf("answer is %d bytes (valid JSON: %v); want a short, valid answer", len(toAgent), json.Valid([]byte(toAgent)))
	}
}

func TestCancelSwallowing(t *testing.T) {
	agentOut := `{"jsonrpc":"2.0","id":"r1","method":"fs/read_text_file"}` + "\n" +
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"r1"}}` + "\n" +
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"r1"}}` + "\n" + // second: forwarded, already taken
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}` + "\n" + // client's own request: forwarded
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"1"}}` + "\n"
	toAgent, toClient := runPumps(t, Policy{}, nil, []byte(agentOut), nil)
	if !strings.HasPrefix(toAgent, refusal(`"r1"`, "fs/read_text_file")) {
		t.Errorf("agent got %q, want the refusal", toAgent)
	}
	wantClient := `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"r1"}}` + "\n" +
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}` + "\n" +
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"1"}}` + "\n"
	if toClient != wantClient {
		t.Errorf("client got\n%s\nwant\n%s", toClient, wantClient)
	}

	// A client request podbot answered itself (an oversize one) has its
	// cancel swallowed too.
	big := `{"jsonrpc":"2.0","id":42,"method":"session/prompt","params":"` + strings.Repeat("x", 200) + `"}` + "\n"
	clientIn := big + `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":42}}` + "\n"
	toAgent, toClient = runPumps(t, Policy{MaxFrameBytes: 100}, []byte(clientIn), nil, nil)
	if toAgent != "" {
		t.Errorf("agent got %q, want nothing", toAgent)
	}
	if !strings.Contains(toClient, `"id":42,"error":{"code":-32600`) {
		t.Errorf("client got %q, want an invalid-request error for id 42", toClient)
	}
}

func TestPassThroughIsByteExact(t *testing.T) {
	clientIn := `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi \u00e9 <&>"}]}}` + "\r\n" +
		"\n" +
		`  {"jsonrpc":"2.0","id":2,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}  ` + "\n" +
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`
	agentOut := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"fs/read_text_file"}}}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}` + "\r\n" +
		`{"jsonrpc":"2.0","id":2,"method":"session/request_permission","params":{"sessionId":"s"}}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"fsx/read"}` + "\n"
	for _, sizes := range [][]int{nil, {1}, {5, 1, 17}} {
		toAgent, toClient := runPumps(t, Policy{}, []byte(clientIn), []byte(agentOut), sizes)
		if toAgent != clientIn {
			t.Errorf("reads %v: agent got\n%q\nwant\n%q", sizes, toAgent, clientIn)
		}
		if toClient != agentOut {
			t.Errorf("reads %v: client got\n%q\nwant\n%q", sizes, toClient, agentOut)
		}
	}
}

func TestMalformedFramesDropped(t *testing.T) {
	tests := []struct{ name, frame string }{
		{"not JSON", `fs/read_text_file` + "\n"},
		{"truncated", `{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file"` + "\n"},
		{"two objects on a line", `{"jsonrpc":"2.0","method":"session/update"} {"jsonrpc":"2.0","id":1,"method":"fs/read_text_file"}` + "\n"},
		{"array batch", `[{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file"}]` + "\n"},
		{"duplicate method", `{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","method":"session/update"}` + "\n"},
		{"duplicate method by case", `{"jsonrpc":"2.0","id":1,"method":"session/update","METHOD":"fs/read_text_file"}` + "\n"},
		{"duplicate id", `{"jsonrpc":"2.0","id":1,"id":2,"method":"session/update"}` + "\n"},
		{"method not a string", `{"jsonrpc":"2.0","id":1,"method":["fs/read_text_file"]}` + "\n"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"fs/read_text_file"}` + "\n"},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":\"\xff\"}\n"},
		{"bare CR hiding a second message", "{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"a\":\r{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"fs/read_text_file\"}\r}}\n"},
		{"scalar", "42\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, buf := logCapture()
			toAgent, toClient := runPumps(t, Policy{Logger: log}, []byte(tt.frame), []byte(tt.frame), nil)
			if toAgent != "" || toClient != "" {
				t.Errorf("forwarded: agent %q client %q; want both empty", toAgent, toClient)
			}
			if !strings.Contains(buf.String(), "dropped a frame") {
				t.Errorf("log %q does not record the drop", buf.String())
			}
		})
	}
}

func TestOversizeFrames(t *testing.T) {
	pad := strings.Repeat("z", 300)
	tests := []struct {
		name                 string
		fromClient, fromAgnt string
		wantAgent, wantClnt  string // substrings; "" means empty output
	}{
		{
			name:      "blocked request from the agent is answered, not forwarded",
			fromAgnt:  `{"jsonrpc":"2.0","id":5,"method":"fs/write_text_file","params":{"content":"` + pad + `"}}` + "\n",
			wantAgent: `{"jsonrpc":"2.0","id":5,"error":{"code":-32600`,
		},
		{
			name:       "initialize from the client is answered, not forwarded",
			fromClient: `{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"clientCapabilities":{"fs":{"readTextFile":true}},"x":"` + pad + `"}}` + "\n",
			wantClnt:   `{"jsonrpc":"2.0","id":"i","error":{"code":-32600`,
		},
		{
			name:     "response from the agent becomes an error response for the client",
			fromAgnt: `{"jsonrpc":"2.0","id":9,"result":{"text":"` + pad + `"}}` + "\n",
			wantClnt: `{"jsonrpc":"2.0","id":9,"error":{"code":-32603`,
		},
		{
			name:     "notification dropped",
			fromAgnt: `{"jsonrpc":"2.0","method":"terminal/create","params":{"x":"` + pad + `"}}` + "\n",
		},
		{
			name:     "id past the first 64 KiB: dropped",
			fromAgnt: `{"jsonrpc":"2.0","params":{"x":"` + strings.Repeat("z", headBytes) + `"},"id":1,"method":"fs/read_text_file"}` + "\n",
		},
		{
			name:     "garbage dropped",
			fromAgnt: pad + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, sizes := range [][]int{nil, {1}, {64}} {
				toAgent, toClient := runPumps(t, Policy{MaxFrameBytes: 100}, []byte(tt.fromClient), []byte(tt.fromAgnt), sizes)
				check := func(side, got, want string) {
					if want == "" && got != "" || !strings.HasPrefix(got, want) {
						t.Errorf("reads %v: %s got %q, want prefix %q", sizes, side, got, want)
					}
					if got != "" && !json.Valid([]byte(got)) {
						t.Errorf("reads %v: %s got invalid JSON %q", sizes, side, got)
					}
				}
				check("agent", toAgent, tt.wantAgent)
				check("client", toClient, tt.wantClnt)
			}
		})
	}
}

func TestCodexMode(t *testing.T) {
	clientIn := `{"id":1,"method":"thread/start","params":{"dynamicTools":[{"name":"t"}]}}` + "\n" +
		`not json from the client is the client's business` + "\n"
	agentOut := `{"id":0,"method":"item/tool/call","params":{"tool":"t","arguments":{}}}` + "\n" +
		`{"method":"item/tool/call","params":{}}` + "\n" +
		`{"id":1,"method":"fs/read_text_file"}` + "\n" +
		`{"method":"item/agentMessage/delta","params":{"delta":"hi"}}` + "\r\n"

	toAgent, toClient := runPumps(t, Policy{Mode: ModeCodexAppServer, CodexBlockDynamicTools: true}, []byte(clientIn), []byte(agentOut), nil)
	wantAgent := clientIn + `{"id":0,"error":{"code":-32601,"message":"item/tool/call is refused by podbot's sandbox policy: dynamic tools would run on the client's host, outside the sandbox (agent.codex_block_dynamic_tools is set)","data":{"method":"item/tool/call"}}}` + "\n"
	if toAgent != wantAgent {
		t.Errorf("agent got\n%s\nwant\n%s", toAgent, wantAgent)
	}
	wantClient := `{"id":1,"method":"fs/read_text_file"}` + "\n" + `{"method":"item/agentMessage/delta","params":{"delta":"hi"}}` + "\r\n"
	if toClient != wantClient {
		t.Errorf("client got\n%s\nwant\n%s", toClient, wantClient)
	}
}
