package engine

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podbot/podbot/errdefs"
)

// hubEvent is one container event with a name, as both engines write it.
func hubEvent(t *testing.T, id, name, action string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"Type": "container", "Action": action,
		"Actor": map[string]any{"ID": id, "Attributes": map[string]string{"name": name}}, "time": 1})
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// streamingEngine is a fake engine whose /events writes what is sent on
// lines, counting the streams opened and reporting each one's end.
type streamingEngine struct {
	*fakeEngine
	opened  atomic.Int32
	lines   chan []byte
	closed  chan struct{}
	endNext chan struct{} // a receive ends the current stream from the engine's side
}

func newStreamingEngine(t *testing.T) *streamingEngine {
	e := &streamingEngine{fakeEngine: newFakeEngine(t), lines: make(chan []byte), closed: make(chan struct{}, 8), endNext: make(chan struct{})}
	e.override["GET /events"] = func(w http.ResponseWriter, r *http.Request) {
		e.opened.Add(1)
		defer func() { e.closed <- struct{}{} }()
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case l := <-e.lines:
				_, _ = w.Write(l)
				w.(http.Flusher).Flush()
			case <-e.endNext:
				return
			case <-r.Context().Done():
				return
			}
		}
	}
	return e
}

// counter counts changed calls and lets a test wait for the next one.
type counter struct {
	n    atomic.Int32
	wake chan struct{}
}

func newCounter() *counter { return &counter{wake: make(chan struct{}, 16)} }

func (c *counter) changed() { c.n.Add(1); c.wake <- struct{}{} }

func (c *counter) await(t *testing.T, what string) {
	t.Helper()
	select {
	case <-c.wake:
	case <-time.After(10 * time.Second):
		t.Fatalf("no changed call: %s", what)
	}
}

func TestEventHubSharesOneStream(t *testing.T) {
	e := newStreamingEngine(t)
	hub := e.connect().NewEventHub()
	ctx, cancel := context.WithCancel(context.Background())
	refs := map[string]*counter{"aaa111": newCounter(), "podbot-b": newCounter(), "ccc333": newCounter()}
	done := make(chan error, len(refs))
	for ref, c := range refs {
		go func() { done <- hub.Watch(ctx, ref, c.changed) }()
	}
	for ref, c := range refs {
		c.await(t, ref+" once connected")
	}
	for _, l := range [][]byte{
		hubEvent(t, "aaa111fff", "podbot-a", "start"), // by id prefix
		hubEvent(t, "bbb222fff", "podbot-b", "die"),   // by name
		hubEvent(t, "ccc333fff", "podbot-c", "exec_start: sh"),
		hubEvent(t, "ddd444fff", "podbot-d", "destroy"), // nobody's
		hubEvent(t, "aaa111fff", "podbot-a", "destroy"),
	} {
		e.lines <- l
	}
	refs["aaa111"].await(t, "start")
	refs["podbot-b"].await(t, "die")
	refs["aaa111"].await(t, "destroy")
	// A last event makes sure nothing earlier is still being dispatched.
	e.lines <- hubEvent(t, "ccc333fff", "podbot-c", "stop")
	refs["ccc333"].await(t, "stop")
	for ref, want := range map[string]int32{"aaa111": 3, "podbot-b": 2, "ccc333": 2} {
		if got := refs[ref].n.Load(); got != want {
			t.Errorf("%s: changed called %d times, want %d", ref, got, want)
		}
	}
	if n := e.opened.Load(); n != 1 {
		t.Errorf("%d event streams opened for %d watchers, want 1", n, len(refs))
	}
	cancel()
	for range refs {
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Watch = %v, want context.Canceled", err)
		}
	}
	select {
	case <-e.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the shared stream stayed open after the last watcher left")
	}
}

func TestEventHubStreamEndReachesEveryWatcher(t *testing.T) {
	e := newStreamingEngine(t)
	hub := e.connect().NewEventHub()
	ctx := context.Background()
	a, b := newCounter(), newCounter()
	done := make(chan error, 2)
	go func() { done <- hub.Watch(ctx, "a", a.changed) }()
	go func() { done <- hub.Watch(ctx, "b", b.changed) }()
	a.await(t, "a connected")
	b.await(t, "b connected")
	e.endNext <- struct{}{}
	for range 2 {
		if err := <-done; !errors.Is(err, errdefs.ErrContainer) {
			t.Errorf("Watch = %v, want the classified end of the stream", err)
		}
	}
	<-e.closed
	// The next watcher opens a new stream.
	ctx2, cancel := context.WithCancel(ctx)
	c := newCounter()
	go func() { done <- hub.Watch(ctx2, "c", c.changed) }()
	c.await(t, "c connected on a new stream")
	if n := e.opened.Load(); n != 2 {
		t.Errorf("%d streams opened, want 2 (one more after the first ended)", n)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Watch = %v, want context.Canceled", err)
	}
}

func TestEventHubRefusesBadArguments(t *testing.T) {
	hub := newFakeEngine(t).connect().NewEventHub()
	if err := hub.Watch(context.Background(), "", func() {}); !errors.Is(err, errdefs.ErrInvalidValue) {
		t.Errorf("Watch without a container = %v", err)
	}
	if err := hub.Watch(context.Background(), "x", nil); !errors.Is(err, errdefs.ErrInvalidValue) {
		t.Errorf("Watch without a callback = %v", err)
	}
	// No event stream at all: the error reaches the watcher, nothing is called.
	called := false
	if err := hub.Watch(context.Background(), "x", func() { called = true }); !errors.Is(err, errdefs.ErrNotFound) || called {
		t.Errorf("Watch on an engine without /events = %v (changed called: %v)", err, called)
	}
}
