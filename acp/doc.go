// Package acp is the policy that sits on podbot's protocol bridge between an
// IDE (the client) and an agent running in the sandbox.
//
// Both Agent Client Protocol (ACP) and Codex app-server speak JSON-RPC 2.0 as
// newline-delimited JSON (one message per line, each direction its own id
// space). Bridge copies those lines between the client's stdio and the
// agent's exec stream and applies the Policy:
//
//   - ACP masking: every initialize request from the client has fs,
//     terminal, auth.terminal and _meta["terminal-auth"] removed from its
//     clientCapabilities (protocol v1) and capabilities (v2) before the
//     agent sees it, so the agent never learns that it could run code or
//     touch files on the client's host. Everything else is kept; frames that
//     are not changed are forwarded byte for byte.
//   - ACP terminal authentication: the ids of the client's initialize
//     requests are remembered (at most 8 distinct ids per connection; a
//     further initialize is refused with -32600 rather than one forgotten).
//     Every agent response with such an id, compared as the client would
//     read it ("\u0031", 1.0 and 1 are one id), loses from its result the
//     authMethods entries of type "terminal", _meta["terminal-auth"] on each
//     method and on the result, and auth.terminal, auth._meta["terminal-auth"]
//     and _meta["terminal-auth"] under agentCapabilities (v1) and
//     capabilities (v2); an authMethods that is not an array is removed.
//     Any error response loses the same entries from error.authMethods and
//     error.data.authMethods. Such entries would have the client relaunch
//     its configured agent program (podbot itself) with arguments and
//     environment the agent chose, or run a command the agent named, on the
//     client's host. Each removal is logged at Warn, naming where it was and
//     never the values. AllowTerminalAuth turns this (and the removal of the
//     client's terminal auth capability) off, and is logged.
//   - ACP refusal: requests from the agent for fs/*, terminal/* and mcp/*
//     never reach the client. podbot answers the agent itself with a
//     JSON-RPC error (-32601) that carries the request's id exactly as sent,
//     drops such notifications, and swallows a later cancel request
//     ($/cancel_request, or its newer name request/cancel) for an id it
//     answered itself, in either direction.
//   - Codex app-server: byte-exact pass-through, unless
//     CodexBlockDynamicTools is set, in which case the server's item/tool/call
//     requests (dynamic tools, which run on the client's host) are refused the
//     same way. The trade-off: with blocking on, a client that offers dynamic
//     tools to a thread sees them fail; with it off, whatever the client
//     registers as a dynamic tool runs on its host at the agent's request.
//   - AllowHostDelegation forwards everything unmodified in both directions
//     and Bridge logs a trust-boundary warning (see Policy.TrustBoundaryWarning).
//
// # Robustness
//
// Input from both peers is untrusted. The rules that keep a blocked method or
// an unmasked initialize from slipping through are:
//
//   - Frames are split on "\n" only and reassembled across reads; a frame's
//     "\r\n" ending is kept as it was.
//   - A frame longer than MaxFrameBytes (default 32 MiB) is never buffered
//     whole and never forwarded. If its first 64 KiB show it is a request
//     with an id, the sender gets an error answer (-32600); if they show a
//     response, the receiver gets an error response for that id (-32603) so
//     it does not wait forever; otherwise it is dropped. Each case is logged.
//   - A frame that the policy must inspect and that is not exactly one JSON
//     object in valid UTF-8, that repeats the method, id or params member
//     (compared case-insensitively, as Go's encoding/json matches names),
//     whose method is not a string, whose id is not a string, number or
//     null, or that holds a bare "\r" anywhere but right before its "\n"
//     (some line readers split there) is dropped and logged, never forwarded.
//   - Method names and capability keys are compared case-insensitively, so a
//     lenient receiver cannot be fooled by "FS/read_text_file" or "Terminal".
//   - Blank lines are forwarded unchanged: they carry no message.
//   - A session/update notification that starts exactly as the ACP SDKs
//     write one has that fixed start compared instead of scanned; the rest is
//     scanned as any frame is, and the frame is checked the same way either way.
//
// There is no mode that forwards raw bytes under the ACP policy: the only way
// to turn the policy off is AllowHostDelegation, and that is logged.
package acp
