package acp

import (
	"testing"
)

func TestInitializeMasking(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "fs and terminal removed, the rest kept in order",
			in:   `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,"other":1},"clientInfo":{"name":"zed","version":"1"}}}` + "\n",
			want: `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"other":1},"clientInfo":{"name":"zed","version":"1"}}}` + "\n",
		},
		{
			name: "auth.terminal and _meta terminal-auth removed, other _meta kept",
			in:   `{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"auth":{"terminal":true,"oauth":true},"_meta":{"terminal-auth":true,"zed.dev/x":{"terminal":true}}},"_meta":{"trace":"t"}}}` + "\n",
			want: `{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"auth":{"oauth":true},"_meta":{"zed.dev/x":{"terminal":true}}},"_meta":{"trace":"t"}}}` + "\n",
		},
		{
			name: "case variants of keys and method removed",
			in:   `{"jsonrpc":"2.0","id":1,"Method":"INITIALIZE","params":{"ClientCapabilities":{"FS":{},"Terminal":true,"_META":{"Terminal-Auth":1}}}}` + "\r\n",
			want: `{"jsonrpc":"2.0","id":1,"Method":"INITIALIZE","params":{"ClientCapabilities":{"_META":{}}}}` + "\r\n",
		},
		{
			name: "repeated capability keys all removed",
			in:   `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{"fs":{},"x":1,"fs":{"readTextFile":true}},"clientCapabilities":{"terminal":true}}}` + "\n",
			want: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{"x":1},"clientCapabilities":{}}}` + "\n",
		},
		{
			name: "escaped key names are seen for what they are",
			in:   `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{"\u0066s":{"readTextFile":true},"term\u0069nal":true}}}` + "\n",
			want: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{}}}` + "\n",
		},
		{
			name: "nothing to remove: byte for byte",
			in:   `{ "jsonrpc" : "2.0", "id":1, "method":"initialize", "params":{"protocolVersion":1, "clientCapabilities":{"x":true}} }` + "\n",
			want: `{ "jsonrpc" : "2.0", "id":1, "method":"initialize", "params":{"protocolVersion":1, "clientCapabilities":{"x":true}} }` + "\n",
		},
		{
			name: "missing params kept",
			in:   `{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n",
			want: `{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n",
		},
		{
			name: "missing clientCapabilities kept",
			in:   `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n",
			want: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n",
		},
		{
			name: "null clientCapabilities kept",
			in:   `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":null}}` + "\n",
			want: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":null}}` + "\n",
		},
		{
			name: "initialize sent as a notification is masked too",
			in:   `{"jsonrpc":"2.0","method":"initialize","params":{"clientCapabilities":{"terminal":true}}}`,
			want: `{"jsonrpc":"2.0","method":"initialize","params":{"clientCapabilities":{}}}`,
		},
		{
			name: "every initialize is masked, not only the first",
			in: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{"terminal":true}}}` + "\n" +
				`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"clientCapabilities":{"fs":{"readTextFile":true}}}}` + "\n",
			want: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{}}}` + "\n" +
				`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"clientCapabilities":{}}}` + "\n",
		},
		{
			name: "other methods with the same shape are untouched",
			in:   `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"clientCapabilities":{"fs":{}}}}` + "\n",
			want: `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"clientCapabilities":{"fs":{}}}}` + "\n",
		},
		{
			name: "html characters are not escaped in a re-encoded frame",
			in:   `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"<a&b>"},"clientCapabilities":{"fs":{}}}}` + "\n",
			want: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"<a&b>"},"clientCapabilities":{}}}` + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			toAgent, toClient := runPumps(t, Policy{}, []byte(tt.in), nil, nil)
			if toAgent != tt.want {
				t.Errorf("agent got\n%s\nwant\n%s", toAgent, tt.want)
			}
			if toClient != "" {
				t.Errorf("client got %q, want nothing", toClient)
			}
		})
	}
}

func TestInitializeWithUnmaskableParamsIsRefused(t *testing.T) {
	for _, params := range []string{`[{"clientCapabilities":{"fs":{}}}]`, `"x"`, `true`} {
		in := `{"jsonrpc":"2.0","id":9,"method":"initialize","params":` + params + "}\n"
		toAgent, toClient := runPumps(t, Policy{}, []byte(in), nil, nil)
		if toAgent != "" {
			t.Errorf("params %s: agent got %q, want nothing", params, toAgent)
		}
		want := `{"jsonrpc":"2.0","id":9,"error":{"code":-32602,`
		if len(toClient) < len(want) || toClient[:len(want)] != want {
			t.Errorf("params %s: client got %q, want an invalid-params error", params, toClient)
		}
	}
}
