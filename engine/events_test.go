package engine

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

// eventLine is one event of the engine's stream as Docker and Podman write it.
func eventLine(t *testing.T, id, action string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"status": action, "id": id, "Type": "container", "Action": action,
		"Actor": map[string]any{"ID": id, "Attributes": map[string]string{"name": "podbot-x"}}, "time": 1})
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func TestWatchContainerCallsBackOnLifecycleEvents(t *testing.T) {
	f := newFakeEngine(t)
	id := "4a5b"
	var gotFilters string
	f.override["GET /events"] = func(w http.ResponseWriter, r *http.Request) {
		gotFilters = r.URL.Query().Get("filters")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		// Exec events come for the container too; they change nothing.
		for _, a := range []string{"exec_create: sh", "exec_start: sh", "start", "exec_die", "die", "destroy"} {
			_, _ = w.Write(eventLine(t, id, a))
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	conn := f.connect()
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	err := conn.WatchContainer(ctx, id, func() {
		// connected, start, die, destroy
		if calls.Add(1) == 4 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("WatchContainer = %v, want context.Canceled once the caller stops", err)
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("changed called %d times, want 4 (once connected, then start, die, destroy; no exec event)", n)
	}
	var filt map[string]map[string]bool
	if err := json.Unmarshal([]byte(gotFilters), &filt); err != nil {
		t.Fatalf("filters %q: %v", gotFilters, err)
	}
	if !filt["type"]["container"] || !filt["container"][id] || len(filt) != 2 {
		t.Errorf("filters = %s, want type=container and container=%s alone", gotFilters, id)
	}
}

func TestWatchContainerReportsAStreamItCannotFollow(t *testing.T) {
	t.Run("no event stream", func(t *testing.T) {
		f := newFakeEngine(t) // answers 404 for /events
		called := false
		err := f.connect().WatchContainer(context.Background(), "x", func() { called = true })
		if !errors.Is(err, errdefs.ErrContainer) || !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("WatchContainer = %v, want a classified not-found error", err)
		}
		if called {
			t.Error("changed was called although the stream never opened")
		}
	})
	t.Run("stream ends", func(t *testing.T) {
		f := newFakeEngine(t)
		f.override["GET /events"] = func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(eventLine(t, "x", "start"))
		}
		err := f.connect().WatchContainer(context.Background(), "x", func() {})
		if err == nil || !errors.Is(err, errdefs.ErrContainer) {
			t.Fatalf("WatchContainer = %v, want an error once the engine ends the stream", err)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		f := newFakeEngine(t)
		f.override["GET /events"] = func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("{not json\n"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
		if err := f.connect().WatchContainer(context.Background(), "x", func() {}); err == nil {
			t.Fatal("WatchContainer accepted a stream that is not JSON")
		}
	})
	t.Run("oversized event", func(t *testing.T) {
		f := newFakeEngine(t)
		f.override["GET /events"] = func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			big := make([]byte, maxEventLine+10)
			for i := range big {
				big[i] = 'a'
			}
			_, _ = w.Write(big)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
		if err := f.connect().WatchContainer(context.Background(), "x", func() {}); err == nil {
			t.Fatal("WatchContainer accepted an event larger than its bound")
		}
	})
	t.Run("bad arguments", func(t *testing.T) {
		f := newFakeEngine(t)
		if err := f.connect().WatchContainer(context.Background(), "", func() {}); !errors.Is(err, errdefs.ErrInvalidValue) {
			t.Fatalf("WatchContainer without a container = %v", err)
		}
	})
}
