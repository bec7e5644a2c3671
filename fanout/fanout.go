// Package fanout shares one event source among many watchers: the
// engine's event stream (engine.EventHub) and the API server's watch of
// podbot's Pods (kube.PodHub) are each opened once however many sandboxes
// are followed, and each event is handed to the watchers it concerns.
package fanout

import (
	"context"
	"sync"
)

// Source follows one event stream until ctx ends or the stream fails or
// ends, and returns why it stopped. It calls ready once the other end has
// accepted the stream (before any emit), and emit with each event, on its
// own goroutine; emit returns once every watcher concerned has been told.
type Source[E any] func(ctx context.Context, ready func(), emit func(E)) error

// Hub shares one Source among its watchers. The source starts with the
// first watcher and stops with the last; when it fails or ends, every
// watcher's Watch returns its error and the next Watch starts it again.
// The zero Hub is not usable: make one with New. A Hub is safe for
// concurrent use.
type Hub[E any] struct {
	source Source[E]

	mu  sync.Mutex
	cur *stream[E] // the stream watchers join; nil when none runs
}

// stream is one run of the source and the watchers that use it.
type stream[E any] struct {
	cancel context.CancelFunc
	ready  chan struct{} // closed once the source is accepted
	done   chan struct{} // closed when the source stopped; err is set before
	err    error

	joined int                      // watchers using the stream, waiting ones too
	live   map[*watcher[E]]struct{} // watchers events are dispatched to
}

// watcher is one Watch call.
type watcher[E any] struct {
	match   func(E) bool
	changed func()
}

// New returns a hub over source.
func New[E any](source Source[E]) *Hub[E] { return &Hub[E]{source: source} }

// Watch calls changed once the shared source is accepted (so the caller
// checks its object then and misses nothing before) and again after each
// event for which match reports true. changed may run on the source's
// goroutine and must not block for long.
//
// Watch returns ctx.Err() once ctx ends, or the source's error when the
// shared source fails or ends.
func (h *Hub[E]) Watch(ctx context.Context, match func(E) bool, changed func()) error {
	s := h.join()
	defer h.leave(s)
	select {
	case <-s.ready:
	case <-s.done:
		return result(ctx, s)
	case <-ctx.Done():
		return ctx.Err()
	}
	w := &watcher[E]{match: match, changed: changed}
	h.mu.Lock()
	select {
	case <-s.done:
		h.mu.Unlock()
		return result(ctx, s)
	default:
	}
	s.live[w] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(s.live, w)
		h.mu.Unlock()
	}()
	// Registered first, then told: a change between the source's start
	// and the registration is seen by the caller's check now.
	changed()
	select {
	case <-s.done:
		return result(ctx, s)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// result is what Watch returns once its stream ended.
func result[E any](ctx context.Context, s *stream[E]) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return s.err
}

// join returns the running stream, starting one if none runs or the last
// one ended, and counts the caller in.
func (h *Hub[E]) join() *stream[E] {
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
	// The source outlives any one watcher's context: it stops when the
	// last watcher leaves.
	ctx, cancel := context.WithCancel(context.Background())
	s := &stream[E]{cancel: cancel, ready: make(chan struct{}), done: make(chan struct{}),
		joined: 1, live: map[*watcher[E]]struct{}{}}
	h.cur = s
	go h.run(ctx, s)
	return s
}

// leave counts the caller out; the last one out stops the source.
func (h *Hub[E]) leave(s *stream[E]) {
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

// run runs the source until ctx ends or it stops, dispatching each event
// to the watchers it matches.
func (h *Hub[E]) run(ctx context.Context, s *stream[E]) {
	var once sync.Once
	err := h.source(ctx, func() { once.Do(func() { close(s.ready) }) }, func(e E) {
		h.mu.Lock()
		var hit []func()
		for w := range s.live {
			if w.match(e) {
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
