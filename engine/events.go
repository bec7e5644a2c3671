package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"github.com/podbot/podbot/errdefs"
)

// maxEventLine bounds one event of the stream; an event carries the
// container's labels, which the engine bounds too.
const maxEventLine = 1 << 20

// lifecycleActions are the event actions after which a container may have
// started, stopped or gone. Docker reports a stop as die and a removal as
// destroy; Podman's compatible stream says stop, die and remove.
var lifecycleActions = map[events.Action]bool{
	events.ActionStart: true, events.ActionStop: true, events.ActionDie: true,
	events.ActionDestroy: true, events.ActionRemove: true,
}

// IsLifecycleAction reports whether an engine event action (start, stop,
// die, destroy or remove) can change whether a container runs or exists.
func IsLifecycleAction(action string) bool { return lifecycleActions[events.Action(action)] }

// WatchContainer follows the engine's event stream (GET /events, served by
// Docker and Podman) for the one container ref (id or name). It calls
// changed once as soon as the engine has accepted the stream, so the
// caller checks the container then and misses nothing that happened
// before, and again after each event that can start, stop or remove the
// container. changed runs on WatchContainer's goroutine and must not block
// for long.
//
// WatchContainer returns when the stream ends: ctx.Err() once ctx ends,
// otherwise a classified error (the engine serves no event stream, the
// connection broke, the stream ended). The engine filters by container;
// only lifecycle actions reach changed, so execs do not.
func (c *Conn) WatchContainer(ctx context.Context, ref string, changed func()) error {
	if ref == "" || changed == nil {
		return &errdefs.ContainerError{Op: "events", Endpoint: c.ep.String(), Reason: errdefs.ErrInvalidValue,
			Msg: "a container and a callback are required to follow its events"}
	}
	args := filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)), filters.Arg("container", ref))
	return c.followEvents(ctx, args, ref, changed, func(events.Message) { changed() })
}

// followEvents reads the engine's event stream with args as its filters:
// accepted runs once the engine has accepted the stream, on each
// container lifecycle event (IsLifecycleAction) after that. It returns as
// WatchContainer does; ref names what is followed in errors.
func (c *Conn) followEvents(ctx context.Context, args filters.Args, ref string, accepted func(), on func(events.Message)) error {
	c.api.NegotiateAPIVersion(ctx)
	q, err := filters.ToJSON(args)
	if err != nil {
		return c.eventsError(ctx, ref, err)
	}
	resp, err := c.rawGet(ctx, "/events", url.Values{"filters": {q}})
	if err != nil {
		return c.eventsError(ctx, ref, err)
	}
	defer resp.Body.Close()
	// Closing the body ends a read blocked on an idle stream.
	stop := context.AfterFunc(ctx, func() { resp.Body.Close() })
	defer stop()
	accepted()
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 0, 4096), maxEventLine)
	for lines.Scan() {
		var m events.Message
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			return c.eventsError(ctx, ref, fmt.Errorf("the engine's event stream holds something that is not an event: %w", err))
		}
		if m.Type == events.ContainerEventType && IsLifecycleAction(string(m.Action)) {
			on(m)
		}
	}
	return c.eventsError(ctx, ref, lines.Err())
}

func (c *Conn) eventsError(ctx context.Context, ref string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err == nil {
		err = errors.New("the event stream ended")
	}
	return c.classify("events", ref, err)
}
