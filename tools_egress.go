package podbot

import (
	"context"
	"fmt"

	"github.com/docker/docker/api/types/container"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/sandbox"
)

// ToolsNetworkAllowlist is the tools.network value that puts a tool
// session's sandbox behind an egress proxy allowing only the hosts of
// network.allow and network.presets. On the engine each container of the
// session gets the internal network and egress proxy of an allowlist
// agent sandbox (NewToolSession); on the kubernetes backend, an egress
// proxy Pod (NewKubeToolSession). Warm pools do not serve it.
const ToolsNetworkAllowlist = "allowlist"

// errToolsAllowlistPool refuses a tools pool whose members would have
// tools.network = "allowlist".
func errToolsAllowlistPool(pool string) error {
	return &errdefs.ConfigError{Key: "tools.network", Reason: errdefs.ErrUnsupported,
		Msg: fmt.Sprintf("tools pool %s: warm tool sessions do not serve tools.network = \"allowlist\" (a member made ahead has no egress proxy for its claimer's policy); "+
			"drop --pool to open a cold allowlist session, or give the pool another network (podbot pool create --network none, bridge or a network name)", pool)}
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

// withToolsEgress points the container options of an engine tool session
// with tools.network = "allowlist" at toolsEngineNetwork: each container
// gets its own egress plumbing, and no network without it. A warm pool
// (opts.Pool) is refused with it; other networks are left alone.
func withToolsEgress(conn *engine.Conn, opts ToolSessionOptions, copts *sandbox.ContainerOptions) error {
	if copts.Network != ToolsNetworkAllowlist {
		return nil
	}
	if opts.Pool != nil {
		return errToolsAllowlistPool(opts.Pool.Name)
	}
	eg, err := toolsEgress(opts.Config)
	if err != nil {
		return err
	}
	sidecar, err := sandbox.CanonicalSidecar(opts.SidecarPath)
	if err != nil {
		return err
	}
	copts.Network = "none" // what a container gets should the hook not run
	copts.EngineNetwork = &toolsEngineNetwork{conn: conn, egress: eg, sidecar: sidecar, runtimeDir: opts.RuntimeDir}
	return nil
}

// toolsEngineNetwork is the egress plumbing of an engine tool session with
// tools.network = "allowlist" (sandbox.EngineNetwork): each container the
// session starts gets what an allowlist agent sandbox gets (prepareEgress),
// named after the container: the internal network podbot-net-<container>,
// the egress proxy podbot-egress-<container> holding the session's policy,
// its policy and log directory, the proxy variables and labels that
// podbot network and podbot rm read, and netlock once it runs. Removing
// the container removes all of it.
type toolsEngineNetwork struct {
	conn       *engine.Conn
	egress     launchplan.Egress
	sidecar    string // canonical host path of podbot-sidecar
	runtimeDir string
}

// Prepare makes the container's internal network and egress proxy and
// points plan at them; on failure it removes what it made.
func (n *toolsEngineNetwork) Prepare(ctx context.Context, plan *launchplan.Plan) error {
	plan.Egress = n.egress
	applyEgressMode(plan)
	_, err := prepareEgress(ctx, n.conn, plan, n.sidecar, n.runtimeDir, nil)
	return err
}

// HostConfig gives the container no usable resolver and no IPv6.
func (n *toolsEngineNetwork) HostConfig(plan launchplan.Plan, hc *container.HostConfig) {
	sandboxHostConfig(plan, hc)
}

// Started runs netlock in the container's network namespace: no default
// route, the internal network's gateway (the engine host) prohibited.
func (n *toolsEngineNetwork) Started(ctx context.Context, plan launchplan.Plan, id string) error {
	info, err := n.conn.InspectNetwork(ctx, egressnet.NetworkName(plan.Name))
	if err != nil {
		return err
	}
	if len(info.Gateways) == 0 {
		return &errdefs.ContainerError{Op: "inspect network", Endpoint: n.conn.Endpoint().String(), Container: info.Name,
			Reason: errdefs.ErrUnsupported, Msg: "the engine reported no gateway for the internal network"}
	}
	return lockNetwork(ctx, n.conn, id, plan.Image, n.sidecar, info.Gateways)
}

// Remove removes container name's proxy, internal network and egress
// directory.
func (n *toolsEngineNetwork) Remove(ctx context.Context, name string) error {
	dirs, err := egressnet.DirsFor(n.runtimeDir, name)
	if err != nil {
		return err
	}
	return removeEgress(ctx, n.conn, name, dirs.Root)
}
