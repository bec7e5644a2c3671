package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

// message is a parsed top-level JSON-RPC frame. Its slices point into the
// frame and into the members buffer it was parsed with.
type message struct {
	members   []member
	method    []byte // decoded
	hasMethod bool
	id        json.RawMessage
	hasID     bool
	params    json.RawMessage
	hasParams bool
}

var (
	errInvalidJSON = errors.New("not valid JSON")
	errNotObject   = errors.New("not a JSON object")
	errBadUTF8     = errors.New("invalid UTF-8")
	errBareCR      = errors.New(`bare "\r" inside the frame`)
	errDuplicate   = errors.New("repeated method, id or params member")
	errMethodType  = errors.New("method is not a string")
	errIDType      = errors.New("id is not a string, number or null")
	errParamsShape = errors.New("initialize params are not an object")
)

// trimTerminator splits a frame into its content and its line ending
// ("\r\n", "\n" or none). A "\r" at the very end of a frame without "\n"
// counts as part of the ending too.
func trimTerminator(frame []byte) (content, term []byte) {
	n := len(frame)
	switch {
	case bytes.HasSuffix(frame, []byte("\r\n")):
		return frame[:n-2], frame[n-2:]
	case bytes.HasSuffix(frame, []byte("\n")), bytes.HasSuffix(frame, []byte("\r")):
		return frame[:n-1], frame[n-1:]
	}
	return frame, nil
}

// isBlank reports whether content holds only JSON whitespace.
func isBlank(content []byte) bool {
	for _, c := range content {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// parseObject reads exactly one JSON object from data and returns its
// members in order, duplicates included. Values are sub-slices of data.
func parseObject(data []byte) ([]member, error) {
	return scanObject(data, nil, false)
}

// decodeString decodes a JSON string token, taking the fast path when it
// holds no escapes.
func decodeString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// stringContent returns the decoded content of a string token that has
// already been validated, without copying when it holds no escapes.
func stringContent(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return nil, false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1], true
	}
	s, ok := decodeString(raw)
	return []byte(s), ok
}

// parseMessage checks a frame's content in one pass (strict JSON, valid
// UTF-8, no "\r") and reads its method, id and params. The members are
// kept in buf's storage, which the caller may pass again for the next frame.
// A notification written the way the ACP SDKs write session/update takes a
// shorter path (see parseUpdate) to the same result.
func parseMessage(content []byte, buf []member) (message, error) {
	m, ok := parseUpdate(content, buf)
	if ok {
		return m, nil
	}
	return parseMessageFull(content, m.members)
}

// parseMessageFull is parseMessage without the session/update path.
func parseMessageFull(content []byte, buf []member) (message, error) {
	members, err := scanObject(content, buf, true)
	m := message{members: members}
	if err != nil {
		return m, err
	}
	for _, mb := range members {
		if k := mb.key; len(k) != len("id") && len(k) != len("method") && isASCII(k) {
			continue // an ASCII name of another length folds to none of the three
		}
		switch {
		case mb.named("method"):
			if m.hasMethod {
				return m, errDuplicate
			}
			m.hasMethod = true
			method, ok := stringContent(mb.value)
			if !ok {
				return m, errMethodType
			}
			m.method = method
		case mb.named("id"):
			if m.hasID {
				return m, errDuplicate
			}
			if !scalarID(mb.value) {
				return m, errIDType
			}
			m.hasID, m.id = true, mb.value
		case mb.named("params"):
			if m.hasParams {
				return m, errDuplicate
			}
			m.hasParams, m.params = true, mb.value
		}
	}
	return m, nil
}

// isASCII reports whether b holds only ASCII bytes.
func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// scalarID reports whether raw is a JSON string, number or null: the id
// types JSON-RPC 2.0 allows.
func scalarID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	case c == 'n':
		return string(raw) == "null"
	}
	return false
}

// idKey turns an id into a key that matches the same id written the same
// way by the same peer.
func idKey(raw json.RawMessage) string {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "s:" + s
		}
	}
	return "v:" + string(raw)
}

// head is what the first bytes of an oversize frame reveal.
type head struct {
	id         json.RawMessage
	hasID      bool
	hasMethod  bool
	isResponse bool
}

// scanHead reads as many top-level members of a truncated JSON object as
// are complete in data.
func scanHead(data []byte) head {
	var h head
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return h
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return h
		}
		key, ok := tok.(string)
		if !ok {
			return h
		}
		switch {
		case strings.EqualFold(key, "method"):
			h.hasMethod = true
		case strings.EqualFold(key, "result"), strings.EqualFold(key, "error"):
			h.isResponse = true
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return h
		}
		if strings.EqualFold(key, "id") && !h.hasID && scalarID(raw) {
			h.id, h.hasID = raw, true
		}
	}
	return h
}

// encodeObject writes members as a JSON object, keeping their order.
func encodeObject(members []member) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, mb := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(&b, string(mb.key))
		b.WriteByte(':')
		b.Write(mb.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// writeString writes s as a JSON string without HTML escaping.
func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // Encode adds "\n"
}
