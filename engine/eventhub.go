package engine

import (
	"context"
	"strings"
	"sync"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"github.com/podbot/podbot/errdefs"
)

// EventHub follows many containers over one event stream of the engine:
// its Watch behaves as Conn.WatchContainer, but every watcher shares one
// GET /events (filtered to container events) instead of opening its own.
// The stream opens with the first watcher and closes with the last; when
// it breaks, every watcher's Watch returns the error and the next Watch
// opens a new one. An EventHub is safe for concurrent use.
type EventHub struct {
	conn *Conn

	mu  sync.Mutex
	cur *hubStream // the stream watchers join; nil when none runs
}

// hubStream is one event stream and the watchers that use it.
type hubStream struct {
	cancel context.CancelFunc
	ready  chan struct{} // closed once the engine accepted the stream
	done   chan struct{} // closed when the stream ended; err is set before
	err    error

	joined int                      // watchers using the stream, waiting ones too
	live   map[*hubWatcher]struct{} // watchers events are dispatched to
}

// hubWatcher is one Watch call.
type hubWatcher struct {
	ref     string
	changed func()
}

// NewEventHub returns a hub that follows containers of c.
func (c *Conn) NewEventHub() *EventHub { return &EventHub{conn: c} }

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
	s := h.join()
	defer h.leave(s)
	select {
	case <-s.ready:
	case <-s.done:
		return h.result(ctx, s)
	case <-ctx.Done():
		return ctx.Err()
	}
	w := &hubWatcher{ref: ref, changed: changed}
	h.mu.Lock()
	select {
	case <-s.done:
		h.mu.Unlock()
		return h.result(ctx, s)
	default:
	}
	s.live[w] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(s.live, w)
		h.mu.Unlock()
	}()
	// Registered first, then told: a change between the stream's start and
	// the registration is seen by the caller's check now.
	changed()
	select {
	case <-s.done:
		return h.result(ctx, s)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// result is what Watch returns once its stream ended.
func (h *EventHub) result(ctx context.Context, s *hubStream) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return s.err
}

// join returns the running stream, starting one if none runs or the last
// one ended, and counts the caller in.
func (h *EventHub) join() *hubStream {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.cur; s != nil {
		select {
		case <-s.done:
		default:
			s.joined++
			return s
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &hubStream{cancel: cancel, ready: make(chan struct{}), done: make(chan struct{}),
		joined: 1, live: map[*hubWatcher]struct{}{}}
	h.cur = s
	go h.run(ctx, s)
	return s
}

// leave counts the caller out; the last one out closes the stream.
func (h *EventHub) leave(s *hubStream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.joined--
	if s.joined == 0 {
		s.cancel()
		if h.cur == s {
			h.cur = nil
		}
	}
}

// run follows the engine's container events until ctx ends or the stream
// fails, dispatching each lifecycle event to the watchers of its container.
func (h *EventHub) run(ctx context.Context, s *hubStream) {
	args := filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)))
	var once sync.Once
	err := h.conn.followEvents(ctx, args, "all containers", func() { once.Do(func() { close(s.ready) }) }, func(m events.Message) {
		h.mu.Lock()
		var hit []func()
		for w := range s.live {
			if matchesActor(w.ref, m.Actor) {
				hit = append(hit, w.changed)
			}
		}
		h.mu.Unlock()
		for _, changed := range hit {
			changed()
		}
	})
	h.mu.Lock()
	s.err = err
	close(s.done)
	h.mu.Unlock()
	s.cancel()
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
