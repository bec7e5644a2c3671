package engine

import (
	"context"
	"strings"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/fanout"
)

// EventHub follows many containers over one event stream of the engine:
// its Watch behaves as Conn.WatchContainer, but every watcher shares one
// GET /events (filtered to container events) instead of opening its own.
// The stream opens with the first watcher and closes with the last; when
// it breaks, every watcher's Watch returns the error and the next Watch
// opens a new one (fanout.Hub). An EventHub is safe for concurrent use.
type EventHub struct {
	conn *Conn
	hub  *fanout.Hub[events.Message]
}

// NewEventHub returns a hub that follows containers of c.
func (c *Conn) NewEventHub() *EventHub {
	args := filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)))
	return &EventHub{conn: c, hub: fanout.New(func(ctx context.Context, ready func(), emit func(events.Message)) error {
		return c.followEvents(ctx, args, "all containers", ready, emit)
	})}
}

// Watch follows the one container ref (id, id prefix or name) as
// WatchContainer does: changed runs once the shared stream is accepted
// (so the caller checks the container then and misses nothing before) and
// again after each event that can start, stop or remove it. An event for
// another container whose id begins with ref may call changed too; a
// spurious call only makes the caller look again. changed may run on the
// hub's goroutine and must not block for long.
//
// Watch returns ctx.Err() once ctx ends, or the stream's classified error
// when the shared stream fails or ends.
func (h *EventHub) Watch(ctx context.Context, ref string, changed func()) error {
	if ref == "" || changed == nil {
		return &errdefs.ContainerError{Op: "events", Endpoint: h.conn.ep.String(), Reason: errdefs.ErrInvalidValue,
			Msg: "a container and a callback are required to follow its events"}
	}
	return h.hub.Watch(ctx, func(m events.Message) bool { return matchesActor(ref, m.Actor) }, changed)
}

// matchesActor reports whether an event's actor is the container ref
// names: its id, a prefix of its id, or its name (Docker and Podman both
// put the name in the attributes).
func matchesActor(ref string, a events.Actor) bool {
	if a.ID == ref || a.Attributes["name"] == ref || strings.TrimPrefix(a.Attributes["name"], "/") == ref {
		return true
	}
	return len(ref) >= 4 && strings.HasPrefix(a.ID, ref)
}
