package tokendaemon

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// stillClock never lets a duration pass: Sleep returns only when ctx ends,
// so anything that happens was caused by an event, not by an interval.
type stillClock struct{}

func (stillClock) Now() time.Time { return t0 }

func (stillClock) Sleep(ctx context.Context, _ time.Duration) error {
	<-ctx.Done()
	return ctx.Err()
}

// memStore records the tokens given to it.
type memStore struct {
	mu     sync.Mutex
	values []string
	got    chan string
}

func (s *memStore) SetToken(_ context.Context, v string) error {
	s.mu.Lock()
	s.values = append(s.values, v)
	s.mu.Unlock()
	s.got <- v
	return nil
}

func TestManagerListsAtEachChange(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &fakeSource{clock: newClock(), ttl: time.Hour}
	var mu sync.Mutex
	targets := []Target{}
	stores := map[string]*memStore{}
	lists := make(chan struct{}, 16)
	changes := make(chan func(), 1)
	m, err := NewManager(ManagerOptions{
		Stores: true,
		Daemon: Options{Source: src, Clock: stillClock{}},
		List: func(context.Context) ([]Target, error) {
			mu.Lock()
			defer mu.Unlock()
			lists <- struct{}{}
			return append([]Target(nil), targets...), nil
		},
		Alive: func(context.Context, string) (bool, error) { return true, nil },
		Changes: func(ctx context.Context, changed func()) error {
			changes <- changed
			<-ctx.Done()
			return ctx.Err()
		},
	})
	if err != nil {
		t.Fatalf("NewManager without a runtime directory, with Stores: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	<-lists
	changed := <-changes

	// A target without a store is refused; one with a store is served at
	// the change, with no interval passing.
	s := &memStore{got: make(chan string, 4)}
	mu.Lock()
	stores["a"] = s
	targets = append(targets, Target{ID: "nostore", Repositories: []string{"r"}}, Target{ID: "a", Repositories: []string{"app"}, Store: s})
	mu.Unlock()
	changed()
	<-lists
	select {
	case v := <-s.got:
		if v != "ghs_tok1" {
			t.Errorf("store got %q", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the change did not start a daemon for the new target")
	}
	if got := m.Running(); len(got) != 1 || got[0] != "a" {
		t.Errorf("running %v, want [a]", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

func TestManagerRetriesChanges(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := newClock()
	calls := make(chan struct{}, 16)
	n := 0
	m, err := NewManager(ManagerOptions{
		Stores: true,
		Daemon: Options{Source: &fakeSource{clock: clock, ttl: time.Hour}, Clock: clock, MinBackoff: time.Second, MaxBackoff: 4 * time.Second},
		List:   func(context.Context) ([]Target, error) { return nil, nil },
		Alive:  func(context.Context, string) (bool, error) { return true, nil },
		Changes: func(context.Context, func()) error {
			n++
			if n == 4 {
				cancel()
			}
			calls <- struct{}{}
			return errors.New("watch refused")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(calls) < 4 {
		t.Errorf("Changes called %d times, want it retried", len(calls))
	}
	if _, err := NewManager(ManagerOptions{Daemon: Options{Source: &fakeSource{clock: clock}}, List: func(context.Context) ([]Target, error) { return nil, nil },
		Alive: func(context.Context, string) (bool, error) { return true, nil }}); err == nil {
		t.Error("a manager without Stores and without a runtime directory was accepted")
	}
}
