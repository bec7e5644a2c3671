package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// The checks below read the bridge's output the way the most lenient
// receiver might: lines split on "\n" and on "\r", every JSON value on a
// line decoded (not only the first), batches looked into, member names and
// methods compared case-insensitively, and every repeated member seen.

// node is a decoded JSON value that keeps every object member, in order.
type node struct {
	members []kv   // object
	items   []node // array
	str     *string
	num     *float64
}

type kv struct {
	key string
	val node
}

func decodeNode(dec *json.Decoder) (node, error) {
	tok, err := dec.Token()
	if err != nil {
		return node{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		var n node
		switch t {
		case '{':
			n.members = []kv{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return n, err
				}
				v, err := decodeNode(dec)
				if err != nil {
					return n, err
				}
				key, _ := k.(string)
				n.members = append(n.members, kv{key, v})
			}
		case '[':
			for dec.More() {
				v, err := decodeNode(dec)
				if err != nil {
					return n, err
				}
				n.items = append(n.items, v)
			}
		}
		_, err := dec.Token()
		return n, err
	case string:
		return node{str: &t}, nil
	case float64:
		return node{num: &t}, nil
	}
	return node{}, nil
}

func (n node) get(key string) []node {
	var out []node
	for _, m := range n.members {
		if strings.EqualFold(m.key, key) {
			out = append(out, m.val)
		}
	}
	return out
}

// messages yields every top-level message a lenient receiver could see.
func messages(out string) []node {
	var msgs []node
	for _, piece := range strings.FieldsFunc(out, func(r rune) bool { return r == '\n' || r == '\r' }) {
		dec := json.NewDecoder(strings.NewReader(piece))
		for {
			n, err := decodeNode(dec)
			if n.members != nil {
				msgs = append(msgs, n)
			}
			for _, it := range n.items {
				if it.members != nil {
					msgs = append(msgs, it)
				}
			}
			if err != nil {
				break
			}
		}
	}
	return msgs
}

func methodsOf(n node) []string {
	var ms []string
	for _, m := range n.get("method") {
		if m.str != nil {
			ms = append(ms, *m.str)
		}
	}
	return ms
}

// unmaskedInitialize reports an initialize on the agent's stdin that still
// offers host capabilities.
func unmaskedInitialize(out string) (string, bool) {
	for _, msg := range messages(out) {
		for _, method := range methodsOf(msg) {
			if !strings.EqualFold(method, "initialize") {
				continue
			}
			for _, params := range msg.get("params") {
				for _, caps := range params.get("clientCapabilities") {
					if len(caps.get("fs")) > 0 || len(caps.get("terminal")) > 0 {
						return "fs or terminal", true
					}
					for _, auth := range caps.get("auth") {
						if len(auth.get("terminal")) > 0 {
							return "auth.terminal", true
						}
					}
					for _, meta := range caps.get("_meta") {
						if len(meta.get("terminal-auth")) > 0 {
							return "_meta terminal-auth", true
						}
					}
				}
			}
		}
	}
	return "", false
}

// blockedToClient reports a blocked request or notification on the
// client's stdout.
func blockedToClient(out string, mode Mode) (string, bool) {
	for _, msg := range messages(out) {
		for _, method := range methodsOf(msg) {
			low := strings.ToLower(method)
			if mode == ModeCodexAppServer {
				if strings.EqualFold(method, codexDynamicToolCall) {
					return method, true
				}
				continue
			}
			for _, p := range []string{"fs/", "terminal/", "mcp/"} {
				if strings.HasPrefix(low, p) || len(method) >= len(p) && strings.EqualFold(method[:len(p)], p) {
					return method, true
				}
			}
		}
	}
	return "", false
}

// sameID reports whether a receiver would take a and b for the same id:
// equal strings or equal numbers.
func sameID(a, b node) bool {
	switch {
	case a.str != nil && b.str != nil:
		return *a.str == *b.str
	case a.num != nil && b.num != nil:
		return *a.num == *b.num
	}
	return false
}

// initializeIDs returns the ids of the initialize requests in out.
func initializeIDs(out string) []node {
	var ids []node
	for _, msg := range messages(out) {
		for _, method := range methodsOf(msg) {
			if strings.EqualFold(method, "initialize") {
				ids = append(ids, msg.get("id")...)
			}
		}
	}
	return ids
}

// terminalAuthIn reports terminal authentication in a list of auth methods.
func terminalAuthIn(methods node) (string, bool) {
	for _, m := range methods.items {
		for _, typ := range m.get("type") {
			if typ.str != nil && strings.EqualFold(*typ.str, "terminal") {
				return "a terminal auth method", true
			}
		}
		for _, meta := range m.get("_meta") {
			if len(meta.get("terminal-auth")) > 0 {
				return "an auth method's _meta terminal-auth", true
			}
		}
	}
	return "", false
}

// unmaskedTerminalAuth reports terminal authentication on the client's
// stdout: in the response to an initialize with one of ids, or in an
// error's auth methods.
func unmaskedTerminalAuth(out string, ids []node) (string, bool) {
	for _, msg := range messages(out) {
		isInit := false
		for _, id := range msg.get("id") {
			for _, want := range ids {
				isInit = isInit || sameID(id, want)
			}
		}
		for _, e := range msg.get("error") {
			for _, am := range e.get("authMethods") {
				if what, bad := terminalAuthIn(am); bad {
					return "error: " + what, true
				}
			}
			for _, data := range e.get("data") {
				for _, am := range data.get("authMethods") {
					if what, bad := terminalAuthIn(am); bad {
						return "error data: " + what, true
					}
				}
			}
		}
		if !isInit {
			continue
		}
		for _, res := range msg.get("result") {
			for _, am := range res.get("authMethods") {
				if am.members != nil {
					return "authMethods that is an object", true
				}
				if what, bad := terminalAuthIn(am); bad {
					return what, true
				}
			}
			for _, meta := range res.get("_meta") {
				if len(meta.get("terminal-auth")) > 0 {
					return "result _meta terminal-auth", true
				}
			}
			for _, name := range []string{"agentCapabilities", "capabilities"} {
				for _, caps := range res.get(name) {
					for _, meta := range caps.get("_meta") {
						if len(meta.get("terminal-auth")) > 0 {
							return name + "._meta terminal-auth", true
						}
					}
					for _, auth := range caps.get("auth") {
						if len(auth.get("terminal")) > 0 {
							return name + ".auth.terminal", true
						}
						for _, meta := range auth.get("_meta") {
							if len(meta.get("terminal-auth")) > 0 {
								return name + ".auth._meta terminal-auth", true
							}
						}
					}
				}
			}
		}
	}
	return "", false
}

func checkInvariants(t *testing.T, p Policy, toAgent, toClient string) {
	t.Helper()
	if p.Mode == ModeACP {
		if what, bad := unmaskedInitialize(toAgent); bad {
			t.Fatalf("an initialize offering %s reached the agent:\n%q", what, toAgent)
		}
		if what, bad := unmaskedTerminalAuth(toClient, initializeIDs(toAgent)); bad {
			t.Fatalf("%s reached the client:\n%q", what, toClient)
		}
	}
	if method, bad := blockedToClient(toClient, p.Mode); bad {
		t.Fatalf("a %s message reached the client:\n%q", method, toClient)
	}
}

var fuzzSeeds = []string{
	`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,"auth":{"terminal":true},"_meta":{"terminal-auth":true}}}}` + "\n",
	`{"jsonrpc":"2.0","id":"x","method":"fs/read_text_file","params":{"path":"/etc/passwd"}}` + "\r\n",
	`{"jsonrpc":"2.0","method":"terminal/create"}` + "\n" + `{"jsonrpc":"2.0","id":null,"method":"mcp/connect"}`,
	`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"x"}}` + "\n",
	`{"id":3,"method":"item/tool/call","params":{"tool":"t"}}` + "\n",
	`{"jsonrpc":"2.0","id":1,"Method":"INITIALIZE","params":{"ClientCapabilities":{"FS":{}}}}` + "\n",
	"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"a\":\r{\"id\":1,\"method\":\"fs/read_text_file\"}\r}}\n",
	`[{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file"}]` + "\n",
	`{"jsonrpc":"2.0","id":9,"result":{"content":"fs/read_text_file"}}` + "\n\n",
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk"}}}` + "\n",
	`{"jsonrpc":"2.0","method":"session/update","params":{},"id":2,"method":"fs/read_text_file"}` + "\n",
	`{"jsonrpc":"2.0","method":"session/update","params":{"a":1}}}` + "\n" + `{"jsonrpc":"2.0","method":"session/update","params":[]}` + "\n",
}

// FuzzFrameReader feeds arbitrary bytes, in arbitrary read sizes and with
// a small frame limit, through both directions of the ACP policy and the
// Codex policy, and checks the frame reader's own bounds.
func FuzzFrameReader(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add([]byte(s+fuzzSeeds[(i+1)%len(fuzzSeeds)]), []byte{1, 7, 3}, uint16(64))
		f.Add([]byte(s), []byte{byte(i + 1)}, uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, data, chunks []byte, limit uint16) {
		sizes := make([]int, 0, len(chunks))
		for _, c := range chunks {
			sizes = append(sizes, int(c)+1)
		}
		maxFrame := 16 + int(limit)%4096

		// Frame reader: frames and oversize sizes account for every byte,
		// and the buffer stays within limit + one chunk.
		fr := NewFrameReader(&chunkReader{data: data, sizes: sizes}, maxFrame)
		var total int64
		var joined bytes.Buffer
		oversize := false
		for {
			frame, err := fr.Next()
			if e, ok := asTooLarge(err); ok {
				if e.Size <= int64(maxFrame) || len(e.Head) > headBytes {
					t.Fatalf("oversize error with size %d, head %d for limit %d", e.Size, len(e.Head), maxFrame)
				}
				total += e.Size + 1
				oversize = true
				continue
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			if bytes.IndexByte(frame[:len(frame)-1], '\n') >= 0 || len(frame) > maxFrame+1 {
				t.Fatalf("bad frame %q for limit %d", frame, maxFrame)
			}
			total += int64(len(frame))
			joined.Write(frame)
			if len(fr.buf) > maxFrame+readChunk {
				t.Fatalf("buffer grew to %d for limit %d", len(fr.buf), maxFrame)
			}
		}
		if !oversize && !bytes.Equal(joined.Bytes(), data) {
			t.Fatalf("frames do not reassemble the input")
		}
		if total < int64(len(data)) || total > int64(len(data))+1 {
			t.Fatalf("frames account for %d bytes of %d", total, len(data))
		}

		for _, p := range []Policy{
			{MaxFrameBytes: maxFrame},
			{Mode: ModeCodexAppServer, CodexBlockDynamicTools: true, MaxFrameBytes: maxFrame},
		} {
			toAgent, toClient := runPumps(t, p, data, data, sizes)
			checkInvariants(t, p, toAgent, toClient)
		}
	})
}

// FuzzPolicy checks single frames (and pairs) against the policy in both
// directions with the default limit.
func FuzzPolicy(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), []byte(`{"jsonrpc":"2.0","id":1,"method":"session/prompt"}`+"\n"))
	}
	f.Fuzz(func(t *testing.T, first, second []byte) {
		input := append(append([]byte{}, first...), second...)
		for _, p := range []Policy{{}, {Mode: ModeCodexAppServer, CodexBlockDynamicTools: true}} {
			toAgent, toClient := runPumps(t, p, input, input, nil)
			checkInvariants(t, p, toAgent, toClient)
		}
	})
}

// agentResponseSeeds are initialize answers a hostile agent might give.
var agentResponseSeeds = []string{
	`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"authMethods":[{"id":"t","name":"T","type":"terminal","args":["--allow-host-delegation"],"env":{"PODBOT_SANDBOX_PRIVILEGED":"true"}},{"id":"a","name":"A"}]}}` + "\n",
	`{"jsonrpc":"2.0","id":0,"result":{"authMethods":[{"id":"l","name":"L","_meta":{"terminal-auth":{"command":"/bin/sh","args":["-c","x"]}}}],"_meta":{"terminal-auth":{}}}}` + "\n",
	`{"jsonrpc":"2.0","id":0.0,"result":{"protocolVersion":2,"capabilities":{"auth":{"terminal":{},"_meta":{"terminal-auth":1}},"_meta":{"terminal-auth":1}},"authMethods":[{"methodId":"t","name":"T","type":"Terminal","env":[{"name":"PODBOT_CONFIG_PATH","value":"/workspace/c.toml"}]}]}}` + "\n",
	`{"jsonrpc":"2.0","ID":"\u0030","Result":{"AuthMethods":[{"TYPE":"agent","typ\u0065":"TERMIN\u0041L"}]},"result":{"authMethods":{"0":{"type":"terminal"}}}}` + "\r\n",
	`{"jsonrpc":"2.0","id":4,"error":{"code":-32000,"message":"auth","authMethods":[{"type":"terminal"}],"data":{"authMethods":[{"_meta":{"terminal-auth":{}}}]}}}` + "\n",
	`{"jsonrpc":"2.0","id":0,"result":{"agentCapabilities":{"auth":{"terminal":true,"logout":{}}},"authMethods":[1,"x",null,{}]}}` + "\n",
}

// FuzzAgentResponse sends the client's initialize with a fuzzed id, then
// fuzzed agent output, and checks that no terminal authentication in an
// initialize response (or an error) reaches the client, and that
// AllowTerminalAuth forwards what the agent sent.
func FuzzAgentResponse(f *testing.F) {
	for i, s := range agentResponseSeeds {
		f.Add([]byte("0"), []byte(s))
		f.Add([]byte(`"0"`), []byte(s+agentResponseSeeds[(i+1)%len(agentResponseSeeds)]))
	}
	f.Add([]byte("1e0"), []byte(`{"jsonrpc":"2.0","id":1,"result":{"authMethods":[{"type":"terminal"}]}}`))
	f.Fuzz(func(t *testing.T, id, fromAgent []byte) {
		fromClient := []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"method":"initialize","params":{"clientCapabilities":{"auth":{"terminal":true}}}}` + "\n")
		toAgent, toClient := runPumps(t, Policy{}, fromClient, fromAgent, nil)
		checkInvariants(t, Policy{}, toAgent, toClient)
		if _, toClient := runPumps(t, Policy{AllowTerminalAuth: true}, fromClient, fromAgent, nil); len(toClient) > len(fromAgent) {
			t.Fatalf("with AllowTerminalAuth the client got more than the agent sent: %q", toClient)
		}
	})
}

// TestInvariantCheckers shows the fuzz checks catch what they look for.
func TestInvariantCheckers(t *testing.T) {
	bad := []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientCapabilities":{"fs":{}}}}`,
		`{"method":"Initialize","params":{"clientCapabilities":{"x":1},"ClientCapabilities":{"Terminal":true}}}`,
		`{"method":"initialize","params":{"clientCapabilities":{"auth":{"terminal":true}}}}`,
		"{}\r" + `{"method":"initialize","params":{"clientCapabilities":{"_meta":{"terminal-auth":1}}}}`,
	}
	for _, s := range bad {
		if _, found := unmaskedInitialize(s + "\n"); !found {
			t.Errorf("unmaskedInitialize missed %s", s)
		}
	}
	for _, s := range []string{
		`{"id":1,"method":"fs/read_text_file"}`,
		`{} {"method":"Terminal/create"}`,
		`[{"method":"mcp/message"}]`,
	} {
		if _, found := blockedToClient(s+"\n", ModeACP); !found {
			t.Errorf("blockedToClient missed %s", s)
		}
	}
	if _, found := blockedToClient(`{"id":1,"method":"item/tool/call"}`, ModeCodexAppServer); !found {
		t.Error("blockedToClient missed item/tool/call")
	}
	if _, found := blockedToClient(`{"id":1,"result":{"method":"fs/x"}}`, ModeACP); found {
		t.Error("blockedToClient flagged a nested method")
	}
	ids := initializeIDs(`{"id":0,"method":"initialize"}` + "\n" + `{"id":"0","method":"Initialize"}` + "\n" + `{"id":"a","method":"initialize"}`)
	for _, s := range agentResponseSeeds {
		if _, found := unmaskedTerminalAuth(strings.ReplaceAll(s, `"id":4`, `"id":9`), ids); !found {
			t.Errorf("unmaskedTerminalAuth missed %s", s)
		}
	}
	for _, s := range []string{
		`{"id":"a","result":{"capabilities":{"auth":{"terminal":{}}}}}`,
		`{"id":0,"result":{"authMethods":{"0":{}}}}`,
	} {
		if _, found := unmaskedTerminalAuth(s, ids); !found {
			t.Errorf("unmaskedTerminalAuth missed %s", s)
		}
	}
	if _, found := unmaskedTerminalAuth(`{"id":1,"result":{"authMethods":[{"type":"terminal"}]}}`, ids); found {
		t.Error("unmaskedTerminalAuth flagged a response to another request")
	}
}

// FuzzPumpMatchesFilter checks that pump, which writes unchanged frames
// straight from the reader's buffer and batches the rest, sends exactly
// what the filter decides frame by frame, in order, whatever the read
// sizes: no frame is lost, repeated, reordered or overwritten by a later
// read.
func FuzzPumpMatchesFilter(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add([]byte(s+fuzzSeeds[(i+1)%len(fuzzSeeds)]+s), []byte{1, 7, 3}, uint16(64), true)
		f.Add([]byte(s), []byte{byte(i + 1)}, uint16(len(s)/2), false)
	}
	f.Fuzz(func(t *testing.T, data, chunks []byte, limit uint16, fromAgent bool) {
		sizes := make([]int, 0, len(chunks))
		for _, c := range chunks {
			sizes = append(sizes, int(c)+1)
		}
		p := Policy{MaxFrameBytes: 16 + int(limit)%4096}
		from := client
		if fromAgent {
			from = agent
		}
		ctx := context.Background()

		var want, wantBack bytes.Buffer
		ref := newFilter(p)
		// The same read sizes: how much of an oversize frame's head is seen
		// depends on them.
		fr := NewFrameReader(&chunkReader{data: data, sizes: sizes}, p.MaxFrameBytes)
		for {
			frame, err := fr.Next()
			var v verdict
			if e, ok := asTooLarge(err); ok {
				v = ref.oversize(ctx, from, e)
			} else if err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			} else {
				v = ref.frame(ctx, from, frame)
			}
			want.Write(v.forward)
			wantBack.Write(v.reply)
		}

		var out, back writeCounter
		err := pump(ctx, newFilter(p), from, &chunkReader{data: data, sizes: sizes},
			&frameWriter{w: &out}, &frameWriter{w: &back}, p.MaxFrameBytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range out.writes {
			if len(w) > batchBytes && bytes.Count([]byte(w), []byte("\n")) > 1 {
				t.Fatalf("a write of %d bytes holds more than one frame", len(w))
			}
		}
		if got := strings.Join(out.writes, ""); got != want.String() {
			t.Fatalf("pump forwarded %q; the filter frame by frame gives %q", got, want.String())
		}
		if got := strings.Join(back.writes, ""); got != wantBack.String() {
			t.Fatalf("pump answered %q; the filter frame by frame gives %q", got, wantBack.String())
		}
	})
}
