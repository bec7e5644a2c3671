package sandbox

import (
	"context"

	"github.com/docker/docker/api/types/container"

	"github.com/podbot/podbot/launchplan"
)

// EngineNetwork gives each container a container session starts on an
// engine a network of its own making, instead of the one
// ContainerOptions.Network names: package podbot's allowlist egress (an
// internal network and an egress proxy per container) for tools.network
// = "allowlist". Implementations must be safe for concurrent use; they
// keep no state per container beyond what its name finds.
type EngineNetwork interface {
	// Prepare makes the network of the container plan describes
	// (plan.Name) and points plan at it: its network, environment and
	// labels. A failed Prepare leaves nothing behind.
	Prepare(ctx context.Context, plan *launchplan.Plan) error
	// HostConfig adjusts the container's rendered host config (its
	// resolver and sysctls) for plan.
	HostConfig(plan launchplan.Plan, hc *container.HostConfig)
	// Started runs once the container (id) of plan runs, before any tool
	// call reaches it: it closes what the sandbox must not reach.
	Started(ctx context.Context, plan launchplan.Plan, id string) error
	// Remove removes what Prepare made for the container called name
	// (after the container itself is gone); missing pieces are fine.
	Remove(ctx context.Context, name string) error
}
