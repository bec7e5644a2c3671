package hostflow

import (
	"fmt"
	"log/slog"

	"github.com/podbot/podbot/acp"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
)

// PolicyFor returns the bridge policy a configuration asks for: the
// protocol from agent.mode, agent.allow_host_delegation,
// agent.allow_terminal_auth, agent.codex_block_dynamic_tools and
// acp.max_frame_bytes. A mode that is
// not a hosting mode is an *errdefs.ConfigError naming agent.mode.
func PolicyFor(cfg config.Config, logger *slog.Logger) (acp.Policy, error) {
	p := acp.Policy{
		AllowHostDelegation:    cfg.Agent.AllowHostDelegation,
		AllowTerminalAuth:      cfg.Agent.AllowTerminalAuth,
		CodexBlockDynamicTools: cfg.Agent.CodexBlockDynamicTools,
		Logger:                 logger,
	}
	switch cfg.Agent.Mode {
	case config.ModeACP:
		p.Mode = acp.ModeACP
	case config.ModeCodexAppServer:
		p.Mode = acp.ModeCodexAppServer
	default:
		return acp.Policy{}, &errdefs.ConfigError{Key: "agent.mode", Reason: errdefs.ErrConflict,
			Msg: fmt.Sprintf("%q is not a protocol-hosting mode; podbot host needs agent.mode = \"acp\" or \"codex_app_server\"", cfg.Agent.Mode)}
	}
	size := cfg.ACP.MaxFrameBytes.Bytes()
	if size < 0 || size > 1<<30 {
		return acp.Policy{}, &errdefs.ConfigError{Key: "acp.max_frame_bytes", Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("got %d bytes; expected between 1k and 1g", size)}
	}
	p.MaxFrameBytes = int(size)
	if err := p.Validate(); err != nil {
		return acp.Policy{}, err
	}
	return p, nil
}
