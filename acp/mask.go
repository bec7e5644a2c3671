package acp

import "encoding/json"

// Capability keys removed from an initialize request's client capabilities:
// each would let the agent run code or touch files on the client's host.
const (
	capFS           = "fs"
	capTerminal     = "terminal"
	capAuth         = "auth"
	capMeta         = "_meta"
	metaTerminalKey = "terminal-auth"
)

// maskInitializeParams removes host capabilities from initialize params:
// from clientCapabilities (protocol v1) and capabilities (v2). With
// keepTerminalAuth (agent.allow_terminal_auth) auth.terminal and
// _meta["terminal-auth"] stay. It returns the params unchanged (and
// changed=false) when there is nothing to remove. Params that are present
// but neither an object nor null are an error: podbot cannot tell what the
// agent would make of them.
func maskInitializeParams(params json.RawMessage, keepTerminalAuth bool) (out json.RawMessage, changed bool, err error) {
	if len(params) == 0 || string(params) == "null" {
		return params, false, nil
	}
	if params[0] != '{' {
		return nil, false, errParamsShape
	}
	members, err := parseObject(params)
	if err != nil {
		return nil, false, err
	}
	for i, mb := range members {
		if !mb.named("clientCapabilities") && !mb.named("capabilities") {
			continue
		}
		v, c, err := maskObject(mb.value, capabilitiesMask(keepTerminalAuth))
		if err != nil {
			return nil, false, err
		}
		if c {
			members[i].value, changed = v, true
		}
	}
	if !changed {
		return params, false, nil
	}
	return encodeObject(members), true, nil
}

// maskObject applies fn to raw when raw is a JSON object and re-encodes it
// if fn changed anything. Values that are not objects are left alone.
func maskObject(raw []byte, fn func([]member) ([]member, bool, error)) (json.RawMessage, bool, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return raw, false, nil
	}
	members, err := parseObject(raw)
	if err != nil {
		return nil, false, err
	}
	members, changed, err := fn(members)
	if err != nil || !changed {
		return raw, false, err
	}
	return encodeObject(members), true, nil
}

// capabilitiesMask returns a mask that drops fs and terminal, and unless
// keepTerminalAuth the terminal entries of auth and _meta, from the
// client's capabilities.
func capabilitiesMask(keepTerminalAuth bool) func([]member) ([]member, bool, error) {
	return func(members []member) ([]member, bool, error) {
		changed := false
		kept := members[:0]
		for _, mb := range members {
			switch {
			case mb.named(capFS), mb.named(capTerminal):
				changed = true
				continue
			case keepTerminalAuth:
			case mb.named(capAuth):
				v, c, err := maskObject(mb.value, dropKey(capTerminal))
				if err != nil {
					return nil, false, err
				}
				mb.value, changed = v, changed || c
			case mb.named(capMeta):
				v, c, err := maskObject(mb.value, dropKey(metaTerminalKey))
				if err != nil {
					return nil, false, err
				}
				mb.value, changed = v, changed || c
			}
			kept = append(kept, mb)
		}
		return kept, changed, nil
	}
}

// dropKey returns a mask that removes every member named key (compared
// case-insensitively).
func dropKey(key string) func([]member) ([]member, bool, error) {
	return func(members []member) ([]member, bool, error) {
		changed := false
		kept := members[:0]
		for _, mb := range members {
			if mb.named(key) {
				changed = true
				continue
			}
			kept = append(kept, mb)
		}
		return kept, changed, nil
	}
}
