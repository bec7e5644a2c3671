package acp

import (
	"bytes"
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

func checkInvariants(t *testing.T, p Policy, toAgent, toClient string) {
	t.Helper()
	if p.Mode == ModeACP {
		if what, bad := unmaskedInitialize(toAgent); bad {
			t.Fatalf("an initialize offering %s reached the agent:\n%q", what, toAgent)
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
}
