package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"unicode/utf8"
)

// JSON-RPC error codes podbot answers with.
const (
	// CodeInvalidRequest answers a request too large to forward.
	CodeInvalidRequest = -32600
	// CodeMethodNotFound answers a request refused by policy.
	CodeMethodNotFound = -32601
	// CodeInvalidParams answers an initialize whose params are not an object.
	CodeInvalidParams = -32602
	// CodeInternalError replaces a response too large to forward.
	CodeInternalError = -32603
)

// maxMethodEcho bounds how much of a peer's method name podbot repeats in
// its answers and logs.
const maxMethodEcho = 256

// peer names a side of the bridge.
type peer int

const (
	client peer = iota
	agent
)

func (p peer) String() string {
	if p == client {
		return "client"
	}
	return "agent"
}

// blockedPrefixes are the ACP method families that would act on the
// client's host.
var blockedPrefixes = [...]string{"fs/", "terminal/", "mcp/"}

// cancelMethods are the names of the per-request cancel notification.
var cancelMethods = [...]string{"$/cancel_request", "request/cancel"}

const codexDynamicToolCall = "item/tool/call"

// verdict is what to do with one frame: bytes for the receiver and bytes
// back to the sender; either may be nil.
type verdict struct {
	forward []byte
	reply   []byte
}

// filter applies a Policy frame by frame. It is safe for concurrent use by
// one pump per direction (one caller of frame per sending peer at a time).
type filter struct {
	p        Policy
	log      *slog.Logger
	answered answeredIDs
	// maskAuth says whether terminal authentication is masked in both
	// directions (ACP without agent.allow_terminal_auth).
	maskAuth bool
	// inits holds the ids of the client's initialize requests.
	inits initIDs
	// members is each sender's buffer for a frame's top-level members,
	// reused from frame to frame.
	members [2][]member
	// parse reads a frame's content: parseMessage, or parseMessageFull
	// where a benchmark compares the two.
	parse func(content []byte, buf []member) (message, error)
}

func newFilter(p Policy) *filter {
	return &filter{p: p, log: p.logger(), maskAuth: p.Mode == ModeACP && !p.AllowTerminalAuth, parse: parseMessage}
}

// frame decides the fate of one frame sent by from.
func (f *filter) frame(ctx context.Context, from peer, frame []byte) verdict {
	content, term := trimTerminator(frame)
	if isBlank(content) {
		return verdict{forward: frame}
	}
	if f.p.Mode == ModeCodexAppServer && from == client {
		return verdict{forward: frame}
	}
	m, err := f.parse(content, f.members[from])
	f.members[from] = m.members
	defer clear(m.members) // drop references into the frame
	if err != nil {
		f.log.WarnContext(ctx, "acp: dropped a frame that is not a single well-formed JSON-RPC message",
			"from", from.String(), "bytes", len(frame), "reason", err.Error())
		return verdict{}
	}
	if !m.hasMethod {
		if from == agent && f.maskAuth {
			return f.agentResponse(ctx, &m, frame, term)
		}
		return verdict{forward: frame}
	}
	if from == client {
		return f.fromClient(ctx, &m, frame, term)
	}
	return f.fromAgent(ctx, &m, frame, term)
}

// fromClient masks initialize, remembers its id, and swallows cancels
// podbot answered.
func (f *filter) fromClient(ctx context.Context, m *message, frame, term []byte) verdict {
	switch {
	case equalFoldASCII(m.method, "initialize"):
		params, changed, err := maskInitializeParams(m.params, f.p.AllowTerminalAuth)
		if err != nil {
			f.log.WarnContext(ctx, "acp: refused an initialize request whose params cannot be masked",
				"reason", err.Error())
			return f.answer(client, m, term, CodeInvalidParams,
				"initialize params must be a JSON object; podbot could not remove the client's host capabilities", nil)
		}
		if f.maskAuth && m.hasID && !f.inits.add(m.id) {
			f.log.WarnContext(ctx, "acp: refused an initialize request beyond the number podbot tracks",
				"limit", maxInitIDs)
			return f.answer(client, m, term, CodeInvalidRequest,
				fmt.Sprintf("podbot accepts at most %d initialize requests with distinct ids on one connection", maxInitIDs), nil)
		}
		if !changed {
			return verdict{forward: frame}
		}
		for i := range m.members {
			if m.members[i].named("params") {
				m.members[i].value = params
			}
		}
		f.log.InfoContext(ctx, "acp: removed the client's host capabilities (fs, terminal, terminal auth) from initialize")
		out := append(encodeObject(m.members), term...)
		return verdict{forward: out}
	case f.swallowCancel(ctx, client, m):
		return verdict{}
	}
	return verdict{forward: frame}
}

// fromAgent refuses blocked methods and swallows cancels podbot answered.
func (f *filter) fromAgent(ctx context.Context, m *message, frame, term []byte) verdict {
	if f.blocked(m.method) {
		method := clip(string(m.method))
		f.log.WarnContext(ctx, "acp: refused an agent request to act on the client's host",
			"method", method, "request", m.hasID, "mode", f.p.Mode.String())
		if !m.hasID {
			return verdict{}
		}
		return f.answer(agent, m, term, CodeMethodNotFound,
			method+" is refused by podbot's sandbox policy: "+f.refusalReason(),
			map[string]string{"method": method})
	}
	if f.p.Mode == ModeACP && f.swallowCancel(ctx, agent, m) {
		return verdict{}
	}
	return verdict{forward: frame}
}

// refusalReason explains a refusal and names the setting behind it.
func (f *filter) refusalReason() string {
	if f.p.Mode == ModeCodexAppServer {
		return "dynamic tools would run on the client's host, outside the sandbox " +
			"(agent.codex_block_dynamic_tools is set)"
	}
	return "the agent runs in a sandbox and may not use the client's host files, terminals or MCP servers " +
		"(set agent.allow_host_delegation to allow it)"
}

// blocked reports whether an agent-sent method must not reach the client.
func (f *filter) blocked(method []byte) bool {
	if f.p.Mode == ModeCodexAppServer {
		return equalFoldASCII(method, codexDynamicToolCall)
	}
	for _, p := range blockedPrefixes {
		if hasPrefixFold(method, p) {
			return true
		}
	}
	return false
}

// hasPrefixFold reports whether method starts with the ASCII prefix p under
// Unicode case folding, as strings.EqualFold(method[:len(p)], p) would.
func hasPrefixFold(method []byte, p string) bool {
	return len(method) >= len(p) && equalFoldASCII(method[:len(p)], p)
}

// swallowCancel reports whether m cancels a request from the same peer
// that podbot answered itself (the other peer never saw it).
func (f *filter) swallowCancel(ctx context.Context, from peer, m *message) bool {
	isCancel := false
	for _, c := range cancelMethods {
		isCancel = isCancel || equalFoldASCII(m.method, c)
	}
	if !isCancel || m.hasID || len(m.params) == 0 || m.params[0] != '{' {
		return false
	}
	members, err := parseObject(m.params)
	if err != nil {
		return false
	}
	for _, mb := range members {
		if mb.named("requestId") && scalarID(mb.value) &&
			f.answered.take(from, idKey(mb.value)) {
			f.log.DebugContext(ctx, "acp: swallowed a cancel for a request podbot answered itself",
				"from", from.String())
			return true
		}
	}
	return false
}

// answer builds an error response to from, the sender of m, and remembers
// its id.
// A notification gets no answer.
func (f *filter) answer(from peer, m *message, term []byte, code int, msg string, data any) verdict {
	if !m.hasID {
		return verdict{}
	}
	f.answered.add(from, idKey(m.id))
	return verdict{reply: f.errorFrame(m.id, code, msg, data, term)}
}

// oversize decides what to do about a frame too large to forward.
func (f *filter) oversize(ctx context.Context, from peer, e *FrameTooLargeError) verdict {
	h := scanHead(e.Head)
	f.log.WarnContext(ctx, "acp: dropped a frame over acp.max_frame_bytes",
		"from", from.String(), "bytes", e.Size, "limit", e.Limit)
	switch {
	case h.hasID && h.hasMethod:
		f.answered.add(from, idKey(h.id))
		return verdict{reply: f.errorFrame(h.id, CodeInvalidRequest, e.Error(), nil, nil)}
	case h.hasID && h.isResponse:
		return verdict{forward: f.errorFrame(h.id, CodeInternalError,
			"podbot dropped the "+from.String()+"'s response: "+e.Error(), nil, nil)}
	}
	return verdict{}
}

// errorFrame encodes a JSON-RPC error response. Codex app-server omits the
// "jsonrpc" member on the wire, so podbot does too in that mode.
func (f *filter) errorFrame(id json.RawMessage, code int, msg string, data any, term []byte) []byte {
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}
	var b bytes.Buffer
	b.WriteByte('{')
	if f.p.Mode != ModeCodexAppServer {
		b.WriteString(`"jsonrpc":"2.0",`)
	}
	b.WriteString(`"id":`)
	b.Write(id)
	b.WriteString(`,"error":`)
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rpcError{Code: code, Message: msg, Data: data}); err != nil {
		// Only strings and ints are encoded; this cannot fail.
		f.log.Error("acp: encoding an error answer failed", "err", err)
	}
	b.Truncate(b.Len() - 1)
	b.WriteByte('}')
	if len(term) == 0 {
		term = []byte("\n")
	}
	b.Write(term)
	return b.Bytes()
}

// clip shortens a peer's method name for answers and logs, keeping UTF-8
// valid.
func clip(s string) string {
	if len(s) <= maxMethodEcho {
		return s
	}
	cut := maxMethodEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// asTooLarge reports whether err is an oversize frame.
func asTooLarge(err error) (*FrameTooLargeError, bool) {
	if err == nil {
		return nil, false // no allocation for errors.As on the per-frame path
	}
	var e *FrameTooLargeError
	ok := errors.As(err, &e)
	return e, ok
}
