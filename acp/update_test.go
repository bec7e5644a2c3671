package acp

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// updateCases are frames that start like an SDK's session/update: the
// ones the short path takes and the ones it must leave to the full path.
var updateCases = []struct {
	content string
	short   bool // parseUpdate takes it
}{
	{`{"jsonrpc":"2.0","method":"session/update","params":{}}`, true},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hé \"x\""}}}}`, true},
	{`{"jsonrpc":"2.0","method":"session/update","params": { "a" : [1, 2] } }`, true},
	{"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":\t{}\n}", true},
	// A request, not a notification: the id follows params.
	{`{"jsonrpc":"2.0","method":"session/update","params":{},"id":1}`, false},
	// Repeated members, which the full path refuses.
	{`{"jsonrpc":"2.0","method":"session/update","params":{},"params":{}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{},"method":"fs/read_text_file"}`, false},
	// Not an object, not valid JSON, not valid UTF-8, a "\r".
	{`{"jsonrpc":"2.0","method":"session/update","params":[]}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":"x"}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"a":"` + "\xff" + `"}}`, false},
	{"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{}\r}", false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"a":1,}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":`, false},
	// Other spellings go the full way.
	{`{"jsonrpc":"2.0","method":"session/updates","params":{}}`, false},
	{`{"method":"session/update","jsonrpc":"2.0","params":{}}`, false},
}

// TestParseUpdateMatchesFullPath checks that the session/update path takes
// exactly the frames it should and returns what the full path returns.
func TestParseUpdateMatchesFullPath(t *testing.T) {
	for _, c := range updateCases {
		_, short := parseUpdate([]byte(c.content), nil)
		if short != c.short {
			t.Errorf("parseUpdate(%q) took it = %v; want %v", c.content, short, c.short)
		}
		checkUpdatePath(t, []byte(c.content))
	}
}

// TestParseUpdateFramesForwarded runs the short path's frames through the
// filter: forwarded unchanged from either side, while a request or a
// blocked method after the prefix is still answered or dropped.
func TestParseUpdateFramesForwarded(t *testing.T) {
	f := newFilter(Policy{})
	ctx := t.Context()
	for _, c := range updateCases {
		if !c.short {
			continue
		}
		frame := []byte(c.content + "\n")
		for _, from := range []peer{client, agent} {
			v := f.frame(ctx, from, frame)
			if !bytes.Equal(v.forward, frame) || v.reply != nil {
				t.Errorf("frame(%s, %q) = %+v; want it forwarded", from, frame, v)
			}
		}
	}
	for _, frame := range []string{
		`{"jsonrpc":"2.0","method":"session/update","params":{},"method":"fs/read_text_file","id":4}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{},"params":{}}`,
	} {
		if v := f.frame(ctx, agent, []byte(frame+"\n")); v.forward != nil {
			t.Errorf("frame(agent, %q) forwarded it", frame)
		}
	}
}

// checkUpdatePath fails t unless parseMessage, with and without the
// session/update path, agrees on content: the same error and, for a valid
// frame, the same method, id, params and members.
func checkUpdatePath(t *testing.T, content []byte) {
	t.Helper()
	got, err := parseMessage(content, nil)
	want, wantErr := parseMessageFull(content, nil)
	if !errors.Is(err, wantErr) && (err != nil || wantErr != nil) {
		t.Fatalf("parseMessage(%q) = %v; full path %v", content, err, wantErr)
	}
	if err != nil {
		return
	}
	if got.hasMethod != want.hasMethod || !bytes.Equal(got.method, want.method) ||
		got.hasID != want.hasID || !bytes.Equal(got.id, want.id) ||
		got.hasParams != want.hasParams || !bytes.Equal(got.params, want.params) {
		t.Fatalf("parseMessage(%q) = %+v; full path %+v", content, got, want)
	}
	if len(got.members) != len(want.members) {
		t.Fatalf("parseMessage(%q) has %d members; full path %d", content, len(got.members), len(want.members))
	}
	for i := range got.members {
		if !bytes.Equal(got.members[i].key, want.members[i].key) || !bytes.Equal(got.members[i].value, want.members[i].value) {
			t.Fatalf("parseMessage(%q) member %d = %q: %q; full path %q: %q", content, i,
				got.members[i].key, got.members[i].value, want.members[i].key, want.members[i].value)
		}
	}
}

// FuzzParseUpdateMatchesFullPath checks the session/update path against
// the full path for any text after the SDK's prefix, and for any frame.
func FuzzParseUpdateMatchesFullPath(f *testing.F) {
	for _, c := range updateCases {
		f.Add([]byte(strings.TrimPrefix(c.content, updatePrefix)), true)
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(strings.TrimRight(s, "\r\n")), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, prefixed bool) {
		if prefixed {
			data = append([]byte(updatePrefix), data...)
		}
		checkUpdatePath(t, data)
	})
}
