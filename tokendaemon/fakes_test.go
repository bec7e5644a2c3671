package tokendaemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/podbot/podbot/github"
)

var t0 = time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)

// fakeClock advances at once on Sleep: tests never wait.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newClock() *fakeClock { return &fakeClock{now: t0} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.sleeps = append(c.sleeps, d)
	return nil
}

// fakeSource issues "ghs_tokN" tokens that live ttl; fail decides, by call
// number (1-based), whether a call fails; before runs first on every call.
type fakeSource struct {
	mu     sync.Mutex
	clock  *fakeClock
	ttl    time.Duration
	fail   func(n int) bool
	before func(n int)
	calls  []time.Time
	repos  [][]string
}

func (s *fakeSource) InstallationToken(_ context.Context, repositories []string) (github.Token, error) {
	s.mu.Lock()
	s.calls = append(s.calls, s.clock.Now())
	s.repos = append(s.repos, repositories)
	n := len(s.calls)
	s.mu.Unlock()
	if s.before != nil {
		s.before(n)
	}
	if s.fail != nil && s.fail(n) {
		return github.Token{}, fmt.Errorf("github unavailable (call %d)", n)
	}
	return github.Token{Value: fmt.Sprintf("ghs_tok%d", n), ExpiresAt: s.clock.Now().Add(s.ttl)}, nil
}

func (s *fakeSource) callTimes() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.calls...)
}

// aliveUntil reports the container alive while the clock is before end.
func aliveUntil(c *fakeClock, end time.Time) func(context.Context) (bool, error) {
	return func(context.Context) (bool, error) { return c.Now().Before(end), nil }
}

// badValueSource returns a token value with a newline in it.
type badValueSource struct{ clock *fakeClock }

func (s *badValueSource) InstallationToken(context.Context, []string) (github.Token, error) {
	return github.Token{Value: "ghs_x\nevil", ExpiresAt: s.clock.Now().Add(time.Hour)}, nil
}

// fakeContainer follows an engine container's state the way the Alive
// check sees it through inspect: it exists from creation until removal and
// runs only between start and stop. stopAt, when set, stops it once the
// clock reaches it; the container still exists afterwards.
type fakeContainer struct {
	mu      sync.Mutex
	clock   *fakeClock
	running bool
	exists  bool
	stopAt  time.Time
	checks  int
}

func (c *fakeContainer) state() (exists, running bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checks++
	if !c.stopAt.IsZero() && !c.clock.Now().Before(c.stopAt) {
		c.running = false
	}
	return c.exists, c.running
}

// alive is the Alive check podbot gives a daemon: State.Running.
func (c *fakeContainer) alive(context.Context) (bool, error) {
	exists, running := c.state()
	return exists && running, nil
}
