package podbot

import (
	"fmt"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// ToolsNetworkAllowlist is the tools.network value that puts a tool
// session's sandbox behind an egress proxy allowing only the hosts of
// network.allow and network.presets. Only the kubernetes backend serves it
// (NewKubeToolSession); the engine's tool sessions refuse it.
const ToolsNetworkAllowlist = "allowlist"

// errToolsAllowlistOnEngine refuses tools.network = "allowlist" on the
// engine backend.
func errToolsAllowlistOnEngine() error {
	return &errdefs.ConfigError{Key: "tools.network", Reason: errdefs.ErrUnsupported,
		Msg: "tools.network = \"allowlist\" runs on the kubernetes backend only (an egress proxy Pod); on the engine a tool session's network is none, bridge or a named network"}
}

// toolsEgress is the egress setting of a tool session with tools.network
// = "allowlist": network.mode's allowlist policy made from cfg's [network]
// section (network.allow, network.presets, network.resolve,
// network.upstream_ca) with no agent preset, whatever network.mode and
// sandbox.network say for agent sandboxes. [[secrets]] are refused: the
// credential vault does not serve tool sessions.
func toolsEgress(cfg config.Config) (launchplan.Egress, error) {
	if n := len(cfg.Secrets); n > 0 {
		return launchplan.Egress{}, &errdefs.ConfigError{Key: "secrets", Reason: errdefs.ErrUnsupported,
			Msg: fmt.Sprintf("tools.network = \"allowlist\" runs no credential vault, and the %d [[secrets]] entries would not reach their hosts; remove them or use tools.network = \"none\"", n)}
	}
	cfg.Network.Mode = string(egress.ModeAllowlist)
	cfg.Sandbox.Network = ""
	return EgressFromConfig(cfg, "")
}
