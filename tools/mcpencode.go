package tools

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// appendMessage appends msg's wire form to dst, without a newline: what
// jsonrpc.EncodeMessage produces, byte for byte when the message's raw
// params or result are compact JSON (as the SDK's own always are).
//
// The SDK builds a message's params or result with json.Marshal, so they
// are valid, compact JSON already; EncodeMessage compacts them once more,
// a scan of the whole payload (for a 1 KiB read_file result, most of what
// encoding a message costs). A request, or a response without an error,
// whose raw part holds no newline is written around it as it is; anything
// else (an error response, a raw part with line breaks, a method or ID
// that needs escaping) goes through EncodeMessage.
func appendMessage(dst []byte, msg jsonrpc.Message) ([]byte, error) {
	start := len(dst)
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if m.Method == "" || !oneLine(m.Params) || !plainString(m.Method) {
			break
		}
		dst = append(dst, `{"jsonrpc":"2.0"`...)
		if m.ID.IsValid() {
			var ok bool
			if dst, ok = appendID(append(dst, `,"id":`...), m.ID); !ok {
				break
			}
		}
		dst = append(append(append(dst, `,"method":"`...), m.Method...), '"')
		if len(m.Params) > 0 {
			dst = append(append(dst, `,"params":`...), m.Params...)
		}
		return append(dst, '}'), nil
	case *jsonrpc.Response:
		if m.Error != nil || !m.ID.IsValid() || !oneLine(m.Result) {
			break
		}
		var ok bool
		if dst, ok = appendID(append(dst, `{"jsonrpc":"2.0","id":`...), m.ID); !ok {
			break
		}
		if len(m.Result) > 0 {
			dst = append(append(dst, `,"result":`...), m.Result...)
		}
		return append(dst, '}'), nil
	}
	data, err := jsonrpc.EncodeMessage(msg)
	return append(dst[:start], data...), err
}

// oneLine reports whether raw can be written into a line as it is.
func oneLine(raw json.RawMessage) bool { return bytes.IndexByte(raw, '\n') < 0 }

// plainString reports whether s can be quoted as a JSON string as it is:
// printable ASCII without quotes or backslashes.
func plainString(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// appendID appends a request ID's JSON form: a number, or a string that
// needs no escaping. It reports false for any other ID.
func appendID(dst []byte, id jsonrpc.ID) ([]byte, bool) {
	switch v := id.Raw().(type) {
	case int64:
		return strconv.AppendInt(dst, v, 10), true
	case string:
		if plainString(v) {
			return append(append(append(dst, '"'), v...), '"'), true
		}
	}
	return dst, false
}
