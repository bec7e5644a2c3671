package sandbox

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/podbot/podbot/tools"
)

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []Event
	notify chan struct{}
}

func newRecorder() *recorder { return &recorder{notify: make(chan struct{}, 1)} }

func (r *recorder) on(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.events))
	for i, e := range r.events {
		out[i] = e.Kind
	}
	return out
}

func (r *recorder) count(kind string) int {
	n := 0
	for _, k := range r.kinds() {
		if k == kind {
			n++
		}
	}
	return n
}

// waitFor waits (up to a generous bound, never asserting timing) for the
// n-th event of kind.
func (r *recorder) waitFor(t *testing.T, kind string, n int) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for r.count(kind) < n {
		select {
		case <-r.notify:
		case <-deadline:
			t.Fatalf("no %d %q events; saw %v", n, kind, r.kinds())
		}
	}
}

func (r *recorder) last(kind string) Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.events) - 1; i >= 0; i-- {
		if r.events[i].Kind == kind {
			return r.events[i]
		}
	}
	return Event{}
}

// newFakeContainer returns a container session on a fake runtime.
func newFakeContainer(t *testing.T, mutate func(*ContainerOptions)) (*Container, *fakeRuntime, *recorder) {
	t.Helper()
	rt := newFakeRuntime()
	rec := newRecorder()
	opts := ContainerOptions{Options: Options{WorkspaceRoot: t.TempDir(), OnEvent: rec.on}, Image: "test", Version: "test"}
	if mutate != nil {
		mutate(&opts)
	}
	s, err := newContainer(context.Background(), rt, opts, sessionPrefix, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s, rt, rec
}

func shell(t *testing.T, s Session, argv ...string) tools.ShellResult {
	t.Helper()
	res, err := Invoke[tools.ShellResult](context.Background(), s, tools.ShellExecuteTool, tools.ShellParams{Command: argv})
	if err != nil {
		t.Fatalf("shell_execute %q: %v", argv, err)
	}
	return res
}

func mustCall(t *testing.T, s Session, name, args string) json.RawMessage {
	t.Helper()
	out, err := s.Call(context.Background(), name, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	return out
}
