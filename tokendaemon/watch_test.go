package tokendaemon

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podbot/podbot/github"
)

// wallSource mints hour-long tokens on the real clock.
type wallSource struct{ n atomic.Int32 }

func (s *wallSource) InstallationToken(context.Context, []string) (github.Token, error) {
	s.n.Add(1)
	return github.Token{Value: "ghs_wall", ExpiresAt: time.Now().Add(time.Hour)}, nil
}

func (c *fakeContainer) remove() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exists, c.running = false, false
}

func (c *fakeContainer) checkCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checks
}

// runDaemon starts d.Run and returns its result channel once the token
// file is in place.
func runDaemon(t *testing.T, d *Daemon) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- d.Run(context.Background()) }()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if _, err := os.Stat(d.TokenPath()); err == nil {
			return done
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon never wrote a token")
		}
	}
}

// awaitGone waits (generously) for Run to return nil and the directory to go.
func awaitGone(t *testing.T, d *Daemon, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v after the container went away, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not notice the container went away")
	}
	if _, err := os.Stat(d.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("token directory left behind: %v", err)
	}
}

// TestRunFollowsEngineEvents: with the event stream open, a removal is
// acted on when the engine reports it, although polling would take an hour,
// and the container is not polled meanwhile.
func TestRunFollowsEngineEvents(t *testing.T) {
	ctr := &fakeContainer{exists: true, running: true}
	removed := make(chan struct{})
	var watches atomic.Int32
	d, err := New(Options{ContainerID: "ev1", RuntimeDir: t.TempDir(), Source: &wallSource{}, Repositories: testRepos,
		Alive: ctr.alive, CheckInterval: time.Hour,
		Watch: func(ctx context.Context, changed func()) error {
			watches.Add(1)
			changed() // the stream is open
			select {
			case <-removed:
				changed()
			case <-ctx.Done():
				return ctx.Err()
			}
			<-ctx.Done()
			return ctx.Err()
		}})
	if err != nil {
		t.Fatal(err)
	}
	done := runDaemon(t, d)
	time.Sleep(50 * time.Millisecond)
	before := ctr.checkCount()
	ctr.remove()
	close(removed)
	awaitGone(t, d, done)
	if before > 3 {
		t.Errorf("the container was checked %d times before any event; the daemon polled instead of waiting for events", before)
	}
	if n := watches.Load(); n != 1 {
		t.Errorf("Watch called %d times for one unbroken stream", n)
	}
}

// TestRunPollsWhileEventsUnavailable: an engine without an event stream,
// or one whose stream breaks, still has its containers checked every
// CheckInterval, and the stream is tried again with backoff.
func TestRunPollsWhileEventsUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		watch func(n int32, ctx context.Context, changed func()) error
	}{
		{"never opens", func(int32, context.Context, func()) error { return errors.New("page not found") }},
		{"breaks after opening", func(n int32, ctx context.Context, changed func()) error {
			if n == 1 {
				changed()
				return errors.New("unexpected EOF")
			}
			return errors.New("connection refused")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctr := &fakeContainer{exists: true, running: true}
			var watches atomic.Int32
			d, err := New(Options{ContainerID: "ev2", RuntimeDir: t.TempDir(), Source: &wallSource{}, Repositories: testRepos,
				Alive: ctr.alive, CheckInterval: 10 * time.Millisecond, MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
				Watch: func(ctx context.Context, changed func()) error { return tc.watch(watches.Add(1), ctx, changed) }})
			if err != nil {
				t.Fatal(err)
			}
			done := runDaemon(t, d)
			for deadline := time.Now().Add(20 * time.Second); watches.Load() < 3 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			if n := watches.Load(); n < 3 {
				t.Errorf("Watch tried %d times; want it retried after failures", n)
			}
			ctr.remove()
			awaitGone(t, d, done)
		})
	}
}
