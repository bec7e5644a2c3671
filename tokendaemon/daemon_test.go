package tokendaemon

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot/errdefs"
)

func readToken(t *testing.T, d *Daemon) string {
	t.Helper()
	b, err := os.ReadFile(d.TokenPath())
	if err != nil {
		t.Fatalf("reading token file: %v", err)
	}
	return string(b)
}

func perm(t *testing.T, p string) fs.FileMode {
	t.Helper()
	info, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}

func gaps(times []time.Time) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(times); i++ {
		out = append(out, times[i].Sub(times[i-1]))
	}
	return out
}

func TestRunRefreshesBeforeExpiryAndCleansUp(t *testing.T) {
	clock := newClock()
	runtime := t.TempDir()
	var d *Daemon
	src := &fakeSource{clock: clock, ttl: time.Hour}
	src.before = func(n int) {
		if n == 1 {
			return
		}
		// Until the new token is written, the previous one stays in place,
		// private, in a private directory.
		if got := readToken(t, d); got != "ghs_tok"+string(rune('0'+n-1)) {
			t.Errorf("before refresh %d the file holds %q", n, got)
		}
		if p := perm(t, d.TokenPath()); p != 0o600 {
			t.Errorf("token file mode %v, want 0600", p)
		}
		if p := perm(t, d.Dir()); p != 0o700 {
			t.Errorf("token dir mode %v, want 0700", p)
		}
	}
	d, err := New(Options{ContainerID: "c0ffee", RuntimeDir: runtime, Source: src, Repositories: testRepos,
		Alive: aliveUntil(clock, t0.Add(3*time.Hour)), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(runtime, "podbot", "c0ffee"); d.Dir() != want {
		t.Fatalf("Dir = %s, want %s", d.Dir(), want)
	}
	if err := d.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	calls := src.callTimes()
	want := []time.Time{t0, t0.Add(55 * time.Minute), t0.Add(110 * time.Minute), t0.Add(165 * time.Minute)}
	if len(calls) != len(want) {
		t.Fatalf("refreshed at %v, want %v", calls, want)
	}
	for i := range want {
		if !calls[i].Equal(want[i]) {
			t.Errorf("refresh %d at %v, want %v (5 minutes before expiry)", i+1, calls[i], want[i])
		}
	}
	if _, err := os.Stat(d.Dir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("token dir still exists after the container went away: %v", err)
	}
	if p := perm(t, filepath.Join(runtime, "podbot")); p != 0o700 {
		t.Errorf("podbot runtime dir mode %v, want 0700", p)
	}
	for _, s := range clock.sleeps {
		if s > DefaultCheckInterval || s <= 0 {
			t.Errorf("slept %v; sleeps must be in (0, CheckInterval]", s)
		}
	}
}

func TestRunBacksOffAndKeepsOldToken(t *testing.T) {
	clock := newClock()
	var d *Daemon
	src := &fakeSource{clock: clock, ttl: time.Hour, fail: func(n int) bool { return n >= 2 && n <= 6 }}
	src.before = func(n int) {
		if n >= 2 && n <= 7 {
			if got := readToken(t, d); got != "ghs_tok1" {
				t.Errorf("during failures the file holds %q, want the old token", got)
			}
		}
	}
	var logs bytes.Buffer
	d, err := New(Options{ContainerID: "box", RuntimeDir: t.TempDir(), Source: src, Repositories: testRepos, Clock: clock,
		Alive: aliveUntil(clock, t0.Add(time.Hour)), MinBackoff: time.Second, MaxBackoff: 8 * time.Second,
		Jitter: func() float64 { return 0.5 }, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	calls := src.callTimes()
	if len(calls) < 7 {
		t.Fatalf("only %d calls", len(calls))
	}
	// Equal jitter at 0.5 waits 3/4 of the doubled base: 1s 2s 4s 8s 8s.
	want := []time.Duration{55 * time.Minute, 750 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second, 6 * time.Second, 6 * time.Second}
	got := gaps(calls[:7])
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("gap %d = %v, want %v (all gaps %v)", i, got[i], want[i], got)
		}
	}
	if strings.Contains(logs.String(), "ghs_tok") {
		t.Errorf("logs carry a token value: %s", logs.String())
	}
	if !strings.Contains(logs.String(), "retrying while the current token is valid") {
		t.Errorf("failures were not logged: %s", logs.String())
	}
}

func TestRunWhenTokenExpiresDuringFailures(t *testing.T) {
	clock := newClock()
	src := &fakeSource{clock: clock, ttl: 2 * time.Minute, fail: func(n int) bool { return n > 1 }}
	var logs bytes.Buffer
	d, err := New(Options{ContainerID: "box", RuntimeDir: t.TempDir(), Source: src, Repositories: testRepos, Clock: clock,
		Alive: aliveUntil(clock, t0.Add(10*time.Minute)), MinBackoff: time.Second, MaxBackoff: 20 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	calls := src.callTimes()
	// A two-minute token is refreshed at half-life, not 5 minutes early.
	if !calls[1].Equal(t0.Add(time.Minute)) {
		t.Errorf("first refresh at %v, want half-life %v", calls[1], t0.Add(time.Minute))
	}
	for i, g := range gaps(calls[1:]) {
		if g > 20*time.Second {
			t.Errorf("retry gap %d = %v exceeds MaxBackoff", i, g)
		}
	}
	if calls[len(calls)-1].Before(t0.Add(9 * time.Minute)) {
		t.Errorf("retries stopped at %v although the container lived on", calls[len(calls)-1])
	}
	if !strings.Contains(logs.String(), "no valid token is left") || strings.Contains(logs.String(), "ghs_tok") {
		t.Errorf("unexpected logs: %s", logs.String())
	}
}

func TestPrepareThenRun(t *testing.T) {
	clock := newClock()
	src := &fakeSource{clock: clock, ttl: time.Hour}
	d, err := New(Options{ContainerID: "box", RuntimeDir: t.TempDir(), Source: src, Repositories: testRepos, Clock: clock,
		Alive: aliveUntil(clock, t0.Add(30*time.Minute))})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := d.Prepare(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !tok.ExpiresAt.Equal(t0.Add(time.Hour)) || readToken(t, d) != "ghs_tok1" {
		t.Fatalf("Prepare = %v, file %q", tok, readToken(t, d))
	}
	if err := d.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(src.callTimes()); n != 1 {
		t.Errorf("Run fetched %d more tokens although Prepare's token was fresh", n-1)
	}
}

func TestPrepareFailure(t *testing.T) {
	clock := newClock()
	src := &fakeSource{clock: clock, ttl: time.Hour, fail: func(int) bool { return true }}
	d, err := New(Options{ContainerID: "box", RuntimeDir: t.TempDir(), Source: src, Repositories: testRepos, Clock: clock, Alive: aliveUntil(clock, t0)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Prepare(context.Background()); err == nil {
		t.Fatal("Prepare succeeded without a token")
	}
	if _, err := os.Stat(d.TokenPath()); !errors.Is(err, fs.ErrNotExist) {
		t.Error("a failed Prepare left a token file")
	}
}

func TestRunStopsOnContextAndToleratesAliveErrors(t *testing.T) {
	clock := newClock()
	src := &fakeSource{clock: clock, ttl: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	checks := 0
	alive := func(context.Context) (bool, error) {
		checks++
		if checks == 5 {
			cancel()
		}
		return false, errors.New("engine unreachable")
	}
	d, err := New(Options{ContainerID: "box", RuntimeDir: t.TempDir(), Source: src, Repositories: testRepos, Clock: clock, Alive: alive})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if checks != 5 {
		t.Errorf("Alive asked %d times, want 5 (errors must not stop the daemon)", checks)
	}
	if readToken(t, d) != "ghs_tok1" {
		t.Error("the token file must stay when the daemon is stopped")
	}
}

func TestRunRefusesBadToken(t *testing.T) {
	clock := newClock()
	bad := &badValueSource{clock: clock}
	d, err := New(Options{ContainerID: "box", RuntimeDir: t.TempDir(), Source: bad, Repositories: testRepos, Clock: clock, Alive: aliveUntil(clock, t0)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Prepare(context.Background())
	if !errors.Is(err, errdefs.ErrGitHub) || strings.Contains(err.Error(), "evil") {
		t.Fatalf("Prepare with a bad token = %v", err)
	}
	entries, _ := os.ReadDir(d.Dir())
	if len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
}

// TestRunStopsAndRemovesTokenForStoppedContainer: a container that stops
// (it still exists, and may be started again) gets no more tokens, and its
// token file does not stay on disk while it is stopped.
func TestRunStopsAndRemovesTokenForStoppedContainer(t *testing.T) {
	clock := newClock()
	ctr := &fakeContainer{clock: clock, exists: true, running: true, stopAt: t0.Add(70 * time.Minute)}
	src := &fakeSource{clock: clock, ttl: time.Hour}
	d, err := New(Options{ContainerID: "kept", RuntimeDir: t.TempDir(), Source: src, Repositories: []string{"demo"}, Alive: ctr.alive, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d.Run(context.Background()); err != nil {
		t.Fatalf("Run returned %v after the container stopped, want nil", err)
	}
	if exists, running := ctr.state(); !exists || running {
		t.Fatalf("fake container exists=%v running=%v, want stopped but present", exists, running)
	}
	calls := src.callTimes()
	for _, c := range calls {
		if !c.Before(t0.Add(70 * time.Minute)) {
			t.Errorf("a token was minted at %v, after the container stopped at %v", c, t0.Add(70*time.Minute))
		}
	}
	if len(calls) != 2 { // Prepare at t0, the refresh at 55 minutes
		t.Errorf("minted %d tokens at %v, want 2", len(calls), calls)
	}
	if _, err := os.Stat(d.TokenPath()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("token file of a stopped container still on disk: %v", err)
	}
	if _, err := os.Stat(d.Dir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("token dir of a stopped container still on disk: %v", err)
	}
	if last := clock.Now(); last.Sub(t0.Add(70*time.Minute)) > DefaultCheckInterval {
		t.Errorf("the daemon noticed the stop at %v, more than a check interval after it", last)
	}
}

// TestEnsureDirRecreatesAnEmptyPrivateDir: the directory a stopped
// container lost comes back empty and private, ready to be mounted.
func TestEnsureDirRecreatesAnEmptyPrivateDir(t *testing.T) {
	runtime := t.TempDir()
	dir, err := EnsureDir(runtime, "kept")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(runtime, "podbot", "kept"); dir != want {
		t.Fatalf("dir = %s, want %s", dir, want)
	}
	if p := perm(t, dir); p != 0o700 {
		t.Errorf("mode %v, want 0700", p)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("entries %v, err %v; want an empty directory", entries, err)
	}
	if _, err := EnsureDir(runtime, "../escape"); !errors.Is(err, errdefs.ErrRefused) {
		t.Errorf("EnsureDir(../escape) = %v, want refused", err)
	}
}
