package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
)

// Names in the agent's answers that carry terminal authentication.
const (
	keyAuthMethods = "authMethods"
	keyType        = "type"
	typeTerminal   = "terminal"
)

// agentResponse masks terminal authentication in a response from the
// agent: in the result of a response to one of the client's initialize
// requests, and in any error that lists auth methods. A terminal auth
// method (type "terminal" with args and env, or a legacy
// _meta["terminal-auth"] entry with a command) asks the client to launch
// its configured agent program, podbot itself, on the client's host with
// what the agent chose, outside the sandbox.
//
// Responses that are neither are forwarded as they are; the id check
// allocates nothing and no result is parsed.
func (f *filter) agentResponse(ctx context.Context, m *message, frame, term []byte) verdict {
	init := m.hasID && f.inits.match(m.id)
	if !init && !hasMember(m.members, "error") {
		return verdict{forward: frame}
	}
	return f.maskAgentResponse(ctx, m, frame, term, init)
}

// hasMember reports whether a member is named name.
func hasMember(members []member, name string) bool {
	for _, mb := range members {
		if mb.named(name) {
			return true
		}
	}
	return false
}

// maskAgentResponse masks the result of an initialize response (init) and
// the auth methods of an error.
func (f *filter) maskAgentResponse(ctx context.Context, m *message, frame, term []byte, init bool) verdict {
	var removed []string
	changed := false
	for i := range m.members {
		mb := &m.members[i]
		var (
			v   []byte
			c   bool
			err error
		)
		switch {
		case init && mb.named("result"):
			v, c, err = maskObject(mb.value, maskInitializeResult(&removed))
		case mb.named("error"):
			v, c, err = maskObject(mb.value, maskAuthError(&removed))
		default:
			continue
		}
		if err != nil {
			f.log.WarnContext(ctx, "acp: replaced an agent response whose auth methods cannot be checked",
				"reason", err.Error())
			return verdict{forward: f.errorFrame(m.id, CodeInternalError,
				"podbot dropped the agent's response: its auth methods could not be checked", nil, term)}
		}
		if c {
			mb.value, changed = v, true
		}
	}
	if !changed {
		return verdict{forward: frame}
	}
	f.log.WarnContext(ctx, "acp: removed terminal authentication from the agent's response; "+
		"it would have the client run podbot (or a command the agent names) on the client's host "+
		"with arguments and environment chosen by the sandboxed agent (set agent.allow_terminal_auth to allow it)",
		"initialize", init, "removed", removed)
	return verdict{forward: append(encodeObject(m.members), term...)}
}

// maskInitializeResult masks an initialize result's members: terminal
// entries of authMethods, _meta["terminal-auth"], and the terminal auth
// capabilities under agentCapabilities (v1) and capabilities (v2).
func maskInitializeResult(removed *[]string) func([]member) ([]member, bool, error) {
	return func(members []member) ([]member, bool, error) {
		changed := false
		kept := members[:0]
		for _, mb := range members {
			var (
				v   []byte
				c   bool
				err error
			)
			switch {
			case mb.named(keyAuthMethods):
				if !isArrayOrNull(mb.value) {
					*removed = append(*removed, "result.authMethods (not an array)")
					changed = true
					continue
				}
				v, c, err = maskAuthMethods(mb.value, "result.authMethods", removed)
			case mb.named("agentCapabilities"), mb.named("capabilities"):
				v, c, err = maskObject(mb.value, maskAgentCapabilities("result.capabilities", removed))
			case mb.named(capMeta):
				v, c, err = maskObject(mb.value, dropKeyLogged(metaTerminalKey, "result._meta.terminal-auth", removed))
			}
			if err != nil {
				return nil, false, err
			}
			if c {
				mb.value, changed = v, true
			}
			kept = append(kept, mb)
		}
		return kept, changed, nil
	}
}

// maskAgentCapabilities removes auth.terminal, auth._meta["terminal-auth"]
// and _meta["terminal-auth"] from the agent's capabilities. Nothing in the
// schema puts them there; a client that reads them anyway is not told.
func maskAgentCapabilities(path string, removed *[]string) func([]member) ([]member, bool, error) {
	return func(members []member) ([]member, bool, error) {
		changed := false
		for i, mb := range members {
			var (
				v   []byte
				c   bool
				err error
			)
			switch {
			case mb.named(capAuth):
				v, c, err = maskObject(mb.value, func(auth []member) ([]member, bool, error) {
					auth, c1, _ := dropKeyLogged(capTerminal, path+".auth.terminal", removed)(auth)
					c2 := false
					for j, a := range auth {
						if a.named(capMeta) {
							v, c, err := maskObject(a.value, dropKeyLogged(metaTerminalKey, path+".auth._meta.terminal-auth", removed))
							if err != nil {
								return nil, false, err
							}
							auth[j].value, c2 = v, c2 || c
						}
					}
					return auth, c1 || c2, nil
				})
			case mb.named(capMeta):
				v, c, err = maskObject(mb.value, dropKeyLogged(metaTerminalKey, path+"._meta.terminal-auth", removed))
			}
			if err != nil {
				return nil, false, err
			}
			if c {
				members[i].value, changed = v, true
			}
		}
		return members, changed, nil
	}
}

// maskAuthError masks the auth methods an error lists, as error.authMethods
// (an unstable v1 field) or error.data.authMethods.
func maskAuthError(removed *[]string) func([]member) ([]member, bool, error) {
	return func(members []member) ([]member, bool, error) {
		changed := false
		for i, mb := range members {
			var (
				v   []byte
				c   bool
				err error
			)
			switch {
			case mb.named(keyAuthMethods):
				v, c, err = maskAuthMethods(mb.value, "error.authMethods", removed)
			case mb.named("data"):
				v, c, err = maskObject(mb.value, func(data []member) ([]member, bool, error) {
					changed := false
					for j, d := range data {
						if d.named(keyAuthMethods) {
							v, c, err := maskAuthMethods(d.value, "error.data.authMethods", removed)
							if err != nil {
								return nil, false, err
							}
							data[j].value, changed = v, changed || c
						}
					}
					return data, changed, nil
				})
			}
			if err != nil {
				return nil, false, err
			}
			if c {
				members[i].value, changed = v, true
			}
		}
		return members, changed, nil
	}
}

// maskAuthMethods removes the terminal methods from an authMethods array
// (any "type" member that reads "terminal" in any case) and
// _meta["terminal-auth"] from the others. Values that are not arrays, and
// entries that are not objects, are left as they are.
func maskAuthMethods(raw []byte, path string, removed *[]string) (json.RawMessage, bool, error) {
	if len(raw) == 0 || raw[0] != '[' {
		return raw, false, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, false, err
	}
	changed := false
	kept := items[:0]
	for i, it := range items {
		at := path + "[" + strconv.Itoa(i) + "]"
		if len(it) == 0 || it[0] != '{' {
			kept = append(kept, it)
			continue
		}
		members, err := parseObject(it)
		if err != nil {
			return nil, false, err
		}
		if isTerminalMethod(members) {
			*removed = append(*removed, at+" (type terminal)")
			changed = true
			continue
		}
		c := false
		for j, mb := range members {
			if mb.named(capMeta) {
				v, cm, err := maskObject(mb.value, dropKeyLogged(metaTerminalKey, at+"._meta.terminal-auth", removed))
				if err != nil {
					return nil, false, err
				}
				members[j].value, c = v, c || cm
			}
		}
		if c {
			it, changed = encodeObject(members), true
		}
		kept = append(kept, it)
	}
	if !changed {
		return raw, false, nil
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, it := range kept {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteByte(']')
	return b.Bytes(), true, nil
}

// isTerminalMethod reports whether any "type" member of an auth method
// reads "terminal", compared case-insensitively.
func isTerminalMethod(members []member) bool {
	for _, mb := range members {
		if !mb.named(keyType) {
			continue
		}
		if s, ok := stringContent(mb.value); ok && equalFoldASCII(s, typeTerminal) {
			return true
		}
	}
	return false
}

// isArrayOrNull reports whether raw is a JSON array or null.
func isArrayOrNull(raw []byte) bool {
	return len(raw) > 0 && raw[0] == '[' || string(raw) == "null"
}

// dropKeyLogged is dropKey that records path for each member it removes.
func dropKeyLogged(key, path string, removed *[]string) func([]member) ([]member, bool, error) {
	drop := dropKey(key)
	return func(members []member) ([]member, bool, error) {
		n := len(members)
		kept, changed, err := drop(members)
		for range n - len(kept) {
			*removed = append(*removed, path)
		}
		return kept, changed, err
	}
}
