package acp

import (
	"fmt"
	"log/slog"

	"github.com/podbot/podbot/errdefs"
)

// maxFrameLimit is the largest acp.max_frame_bytes podbot accepts (1 GiB).
const maxFrameLimit = 1 << 30

// Mode names the protocol spoken on the bridge.
type Mode int

const (
	// ModeACP is the Agent Client Protocol: masking and refusal apply.
	ModeACP Mode = iota
	// ModeCodexAppServer is Codex app-server: pass-through, optionally
	// refusing dynamic tool calls (Policy.CodexBlockDynamicTools).
	ModeCodexAppServer
)

// String returns the mode's configuration spelling ("acp", "codex_app_server").
func (m Mode) String() string {
	switch m {
	case ModeACP:
		return "acp"
	case ModeCodexAppServer:
		return "codex_app_server"
	default:
		return fmt.Sprintf("Mode(%d)", int(m))
	}
}

// Policy says what Bridge lets through. The zero value is the ACP policy
// with the default frame limit and no logging.
type Policy struct {
	// Mode is the protocol on the bridge.
	Mode Mode
	// AllowHostDelegation forwards everything unmodified in both directions
	// (agent.allow_host_delegation). It crosses the trust boundary: the
	// agent may then use the client's host files, terminals and MCP servers.
	AllowHostDelegation bool
	// AllowTerminalAuth lets ACP terminal authentication through
	// (agent.allow_terminal_auth): the client's auth.terminal capability
	// reaches the agent, and the agent's terminal auth methods (and legacy
	// _meta["terminal-auth"] entries) reach the client. It crosses the trust
	// boundary: the client may then relaunch its configured agent program
	// (podbot itself) with arguments and environment the agent chose.
	AllowTerminalAuth bool
	// CodexBlockDynamicTools refuses Codex app-server item/tool/call
	// requests (agent.codex_block_dynamic_tools). Only used in
	// ModeCodexAppServer.
	CodexBlockDynamicTools bool
	// MaxFrameBytes bounds one frame (acp.max_frame_bytes); zero means
	// DefaultMaxFrameBytes.
	MaxFrameBytes int
	// Logger receives refusals, masking and dropped frames; nil discards them.
	Logger *slog.Logger
}

// Validate reports a configuration problem as an *errdefs.ConfigError.
func (p Policy) Validate() error {
	switch {
	case p.Mode != ModeACP && p.Mode != ModeCodexAppServer:
		return &errdefs.ConfigError{Key: "agent.mode", Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("%s is not a protocol mode; use \"acp\" or \"codex_app_server\"", p.Mode)}
	case p.MaxFrameBytes < 0 || p.MaxFrameBytes > maxFrameLimit:
		return &errdefs.ConfigError{Key: "acp.max_frame_bytes", Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("%d is out of range; use a size between 1 and %d bytes, or 0 for the default of %d",
				p.MaxFrameBytes, maxFrameLimit, DefaultMaxFrameBytes)}
	}
	return nil
}

// TrustBoundaryWarning returns the warning to log when the policy lets the
// agent reach the client's host, or "" when it does not. Bridge logs it at
// start; callers that do not use Bridge should log it themselves.
func (p Policy) TrustBoundaryWarning() string {
	switch {
	case p.AllowHostDelegation:
		return "agent.allow_host_delegation is on: the sandboxed agent may read and write files, " +
			"run terminals and use MCP servers on the client's host through the protocol bridge; " +
			"this crosses podbot's trust boundary"
	case p.AllowTerminalAuth && p.Mode == ModeACP:
		return "agent.allow_terminal_auth is on: the sandboxed agent's terminal authentication methods reach the client, " +
			"which may then run its configured agent program (podbot) on the client's host with arguments and " +
			"environment the agent chose (for example --allow-host-delegation or PODBOT_ settings); " +
			"this crosses podbot's trust boundary"
	}
	return ""
}

// passThrough reports whether the bridge copies bytes without looking at them.
func (p Policy) passThrough() bool {
	return p.AllowHostDelegation || (p.Mode == ModeCodexAppServer && !p.CodexBlockDynamicTools)
}

// maxFrame is the frame limit in effect.
func (p Policy) maxFrame() int {
	if p.MaxFrameBytes == 0 {
		return DefaultMaxFrameBytes
	}
	return p.MaxFrameBytes
}

// logger is the policy's logger, or one that discards.
func (p Policy) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Logger
}
