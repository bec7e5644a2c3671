package tools

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// checkAppendMessage asserts that appendMessage writes msg after a prefix
// as one line holding exactly what jsonrpc.EncodeMessage makes of it.
func checkAppendMessage(t testing.TB, msg jsonrpc.Message) {
	t.Helper()
	want, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		t.Fatalf("EncodeMessage: %v", err)
	}
	prefix := []byte("kept:")
	got, err := appendMessage(append([]byte(nil), prefix...), msg)
	if err != nil {
		t.Fatalf("appendMessage: %v", err)
	}
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("appendMessage dropped what dst held: %q", got)
	}
	got = got[len(prefix):]
	if !bytes.Equal(got, want) {
		t.Fatalf("appendMessage wrote\n%s\nEncodeMessage\n%s", got, want)
	}
	if bytes.IndexByte(got, '\n') >= 0 {
		t.Fatalf("message spans lines: %q", got)
	}
	if _, err := jsonrpc.DecodeMessage(got); err != nil {
		t.Fatalf("the SDK cannot decode %s: %v", got, err)
	}
}

func TestAppendMessageMatchesEncodeMessage(t *testing.T) {
	result := json.RawMessage(`{"content":[{"type":"text","text":"{\"stdout\":\"a<b>&c \\u2028 é\\n\"}"}]}`)
	cases := map[string]jsonrpc.Message{
		"call, number id":         &jsonrpc.Request{ID: mustID(t, float64(7)), Method: "tools/call", Params: json.RawMessage(`{"name":"ls","arguments":{"path":"."}}`)},
		"call, string id":         &jsonrpc.Request{ID: mustID(t, "req-1"), Method: "tools/list", Params: json.RawMessage(`{}`)},
		"call without params":     &jsonrpc.Request{ID: mustID(t, float64(1)), Method: "ping"},
		"notification":            &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)},
		"notification, no params": &jsonrpc.Request{Method: "notifications/initialized"},
		"result":                  &jsonrpc.Response{ID: mustID(t, float64(2)), Result: result},
		"empty result":            &jsonrpc.Response{ID: mustID(t, float64(3))},
		"negative id":             &jsonrpc.Response{ID: mustID(t, float64(-4)), Result: json.RawMessage(`{}`)},
		// Each of these takes EncodeMessage's path.
		"error":                  &jsonrpc.Response{ID: mustID(t, float64(5)), Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad \"path\""}},
		"result over lines":      &jsonrpc.Response{ID: mustID(t, float64(6)), Result: json.RawMessage("{\n  \"a\": [1,\n 2]\n}")},
		"params over lines":      &jsonrpc.Request{ID: mustID(t, float64(8)), Method: "tools/call", Params: json.RawMessage("{\"a\":\n1}")},
		"method needs escaping":  &jsonrpc.Request{ID: mustID(t, float64(9)), Method: "we\"ird\\é", Params: json.RawMessage(`{}`)},
		"string id with a quote": &jsonrpc.Response{ID: mustID(t, `a"b`), Result: json.RawMessage(`{}`)},
		"empty method":           &jsonrpc.Request{ID: mustID(t, float64(10)), Params: json.RawMessage(`{}`)},
	}
	for name, msg := range cases {
		t.Run(name, func(t *testing.T) { checkAppendMessage(t, msg) })
	}
}

// TestLineTransportWritesOneLinePerMessage sends a result whose raw JSON
// spans lines: the peer still gets it as one message.
func TestLineTransportWritesOneLinePerMessage(t *testing.T) {
	var out bytes.Buffer
	conn, err := (&LineTransport{Reader: io.NopCloser(strings.NewReader("")), Writer: nopWriteCloser{&out}}).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := []jsonrpc.Message{
		&jsonrpc.Response{ID: mustID(t, float64(1)), Result: json.RawMessage("{\n\"a\": 1\n}")},
		&jsonrpc.Response{ID: mustID(t, float64(2)), Result: json.RawMessage(`{"b":2}`)},
	}
	for _, m := range msgs {
		if err := conn.Write(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := out.String(), "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":1}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"b\":2}}\n"; got != want {
		t.Fatalf("wrote %q, want %q", got, want)
	}
}

// FuzzAppendMessage checks appendMessage against jsonrpc.EncodeMessage for
// requests and responses built from arbitrary IDs, methods and compact
// JSON.
func FuzzAppendMessage(f *testing.F) {
	f.Add(int64(1), "", false, "tools/call", []byte(`{"name":"ls"}`), false)
	f.Add(int64(0), "x-1", true, "", []byte(`{"content":[]}`), true)
	f.Add(int64(-9), "<&>", true, "a\"b", []byte(`"\u2028"`), true)
	f.Fuzz(func(t *testing.T, n int64, s string, stringID bool, method string, raw []byte, response bool) {
		var compact bytes.Buffer
		if len(raw) > 0 && json.Compact(&compact, raw) != nil {
			return
		}
		var id jsonrpc.ID
		if stringID {
			id = mustID(t, s)
		} else {
			id = mustID(t, float64(n))
		}
		if response {
			checkAppendMessage(t, &jsonrpc.Response{ID: id, Result: compact.Bytes()})
			return
		}
		checkAppendMessage(t, &jsonrpc.Request{ID: id, Method: method, Params: compact.Bytes()})
	})
}

// BenchmarkAppendMessage encodes a read_file result of 1 KiB as the SDK
// hands it to the transport, with jsonrpc.EncodeMessage (the baseline) and
// with appendMessage, in the same run, and reports both and their ratio.
func BenchmarkAppendMessage(b *testing.B) {
	text, err := json.Marshal(ReadFileResult{FilePath: "kib.txt", Content: strings.Repeat("0123456789abcde\n", 64), TotalLines: 64})
	if err != nil {
		b.Fatal(err)
	}
	result, err := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": string(text)}}})
	if err != nil {
		b.Fatal(err)
	}
	msg := &jsonrpc.Response{ID: mustID(b, float64(42)), Result: result}
	var buf []byte
	var sdkNS, appendNS float64
	for b.Loop() {
		start := time.Now()
		for range 100 {
			if _, err := jsonrpc.EncodeMessage(msg); err != nil {
				b.Fatal(err)
			}
		}
		mid := time.Now()
		for range 100 {
			buf, _ = appendMessage(buf[:0], msg)
		}
		sdkNS += float64(mid.Sub(start).Nanoseconds()) / 100
		appendNS += float64(time.Since(mid).Nanoseconds()) / 100
	}
	b.ReportMetric(sdkNS/float64(b.N), "encode-message-ns/msg")
	b.ReportMetric(appendNS/float64(b.N), "append-message-ns/msg")
	b.ReportMetric(sdkNS/appendNS, "x-encode/append")
}
