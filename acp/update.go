package acp

import "bytes"

// updatePrefix is how the ACP SDKs begin a session/update notification,
// the bulk of an agent's output (every streamed chunk is one): the members
// jsonrpc and method, then the name of params.
const updatePrefix = `{"jsonrpc":"2.0","method":"session/update","params":`

// parseUpdate is parseMessage for a frame that is exactly updatePrefix, one
// JSON value and "}": it compares the prefix instead of scanning it and
// validates the rest with the same scanner, so the frame is accepted only
// if the full scan would accept it, with the same method, id (none) and
// params. Any other frame, valid or not, returns ok false (with m.members
// holding buf's storage, for the full path to reuse), and the caller takes
// the full path, which alone reports errors.
//
// The value must be an object: it is validated as one JSON text (with
// "\r" refused, as everywhere in a frame), so whitespace around it is
// allowed, and the frame's last byte must close the outer object. Such a
// frame is an object of exactly the three members jsonrpc, method and
// params: nothing can follow the value but the closing brace.
func parseUpdate(content []byte, buf []member) (m message, ok bool) {
	n := len(content)
	if n < len(updatePrefix)+3 || content[n-1] != '}' || !bytes.HasPrefix(content, []byte(updatePrefix)) {
		return message{members: buf}, false
	}
	value := content[len(updatePrefix) : n-1]
	// The params object's own members land in buf's storage; they are
	// replaced by the frame's below.
	members, err := scanObject(value, buf, true)
	if err != nil {
		return message{members: members}, false
	}
	start, end := 0, len(value)
	for isSpace(value[start]) {
		start++
	}
	for isSpace(value[end-1]) {
		end--
	}
	params := value[start:end]
	const (
		jsonrpcAt = len(`{"`)
		versionAt = len(`{"jsonrpc":`)
		methodAt  = len(`{"jsonrpc":"2.0","`)
		nameAt    = len(`{"jsonrpc":"2.0","method":`)
		paramsAt  = len(`{"jsonrpc":"2.0","method":"session/update","`)
	)
	if len(members) > 3 {
		clear(members[3:]) // the params' own members: no references kept
	}
	members = append(members[:0],
		member{key: content[jsonrpcAt : jsonrpcAt+len("jsonrpc")], value: content[versionAt : versionAt+len(`"2.0"`)]},
		member{key: content[methodAt : methodAt+len("method")], value: content[nameAt : nameAt+len(`"session/update"`)]},
		member{key: content[paramsAt : paramsAt+len("params")], value: params},
	)
	return message{
		members:   members,
		method:    content[nameAt+1 : nameAt+len(`"session/update"`)-1],
		hasMethod: true,
		params:    params,
		hasParams: true,
	}, true
}

// isSpace reports whether c is JSON whitespace other than "\r" (which a
// frame may not hold, and the scan has refused already).
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }
