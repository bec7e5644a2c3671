package pool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := OpenStore(filepath.Join(t.TempDir(), "pools"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReconcileFillsReplacesAndShrinks(t *testing.T) {
	b := newFake()
	st := newStore(t)
	now := time.Now()
	r := &Refiller{Backend: b, Store: st, MaxAge: time.Hour, Now: func() time.Time { return now }}
	spec := Spec{Name: "p", Kind: KindTools, Size: 4}
	got, err := r.Reconcile(context.Background(), spec)
	if err != nil || got.Ready != 4 || b.count(StateReady) != 4 {
		t.Fatalf("status %+v, err %v, ready %d", got, err, b.count(StateReady))
	}
	// One claimed, one died, one too old, one half-made for too long.
	b.set("1", StateClaimed, time.Time{})
	b.set("2", StateFailed, time.Time{})
	b.set("3", StateReady, now.Add(-2*time.Hour))
	b.set("4", StateStarting, now.Add(-10*time.Minute))
	got, err = r.Reconcile(context.Background(), spec)
	if err != nil || got.Ready != 4 || got.Claimed != 1 {
		t.Fatalf("status %+v, err %v", got, err)
	}
	if b.count(StateReady) != 4 || b.count(StateClaimed) != 1 || len(b.removed) != 3 {
		t.Fatalf("ready %d claimed %d removed %v", b.count(StateReady), b.count(StateClaimed), b.removed)
	}
	spec.Size = 1
	if got, err = r.Reconcile(context.Background(), spec); err != nil || got.Ready != 1 || b.count(StateClaimed) != 1 {
		t.Fatalf("after shrink: %+v, %v; claimed %d", got, err, b.count(StateClaimed))
	}
	saved, err := st.GetStatus("p")
	if err != nil || saved.Ready != 1 || saved.Claimed != 1 || saved.UpdatedAt.IsZero() {
		t.Fatalf("saved %+v, %v", saved, err)
	}
}

func TestReconcileBacksOffAndReportsTheError(t *testing.T) {
	b := newFake()
	b.createFn = func(Spec) error {
		return errors.New("image localhost/missing:latest not found\nsecond line")
	}
	st := newStore(t)
	now := time.Now()
	r := &Refiller{Backend: b, Store: st, Now: func() time.Time { return now }}
	spec := Spec{Name: "p", Size: 2}
	got, err := r.Reconcile(context.Background(), spec)
	if err == nil || got.Failing != 1 || !strings.Contains(got.LastError, "missing") || !got.RetryAt.Equal(now.Add(2*time.Second)) {
		t.Fatalf("status %+v, err %v", got, err)
	}
	creates := b.creates
	// Within the backoff no create is tried: no hot loop.
	for range 5 {
		r.Reconcile(context.Background(), spec)
	}
	if b.creates != creates {
		t.Fatalf("created %d times during backoff", b.creates-creates)
	}
	now = now.Add(3 * time.Second)
	got, _ = r.Reconcile(context.Background(), spec)
	if got.Failing != 2 || !got.RetryAt.Equal(now.Add(4*time.Second)) {
		t.Fatalf("second failure: %+v", got)
	}
	// A new refiller keeps the backoff (it is in the status file).
	r2 := &Refiller{Backend: b, Store: st, Now: func() time.Time { return now }}
	creates = b.creates
	r2.Reconcile(context.Background(), spec)
	if b.creates != creates {
		t.Fatal("a restarted refiller ignored the backoff")
	}
	b.createFn = nil
	now = now.Add(time.Minute)
	got, err = r.Reconcile(context.Background(), spec)
	if err != nil || got.Failing != 0 || !got.RetryAt.IsZero() || got.Ready != 2 {
		t.Fatalf("after recovery: %+v, %v", got, err)
	}
}

func TestBackoffBounds(t *testing.T) {
	if Backoff(0) != 0 || Backoff(1) != 2*time.Second || Backoff(3) != 8*time.Second || Backoff(100) != 5*time.Minute {
		t.Fatal(Backoff(0), Backoff(1), Backoff(3), Backoff(100))
	}
}

func TestStoreRoundTripAndRefusals(t *testing.T) {
	st := newStore(t)
	ro := true
	spec := Spec{Name: "evals", Kind: KindAgent, Size: 3, Network: "none", ReadOnlyRootfs: &ro}
	if err := st.Put(spec); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get("evals")
	if err != nil || got.Size != 3 || got.Kind != KindAgent || got.ReadOnlyRootfs == nil || !*got.ReadOnlyRootfs {
		t.Fatalf("%+v %v", got, err)
	}
	fi, _ := os.Stat(filepath.Join(st.Dir(), "evals.json"))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if err := st.PutStatus("evals", Status{LastError: strings.Repeat("x", 5000)}); err != nil {
		t.Fatal(err)
	}
	if s, _ := st.GetStatus("evals"); len(s.LastError) > maxErrorText+4 {
		t.Fatalf("error text not bounded: %d", len(s.LastError))
	}
	list, err := st.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("%v %v", list, err)
	}
	if _, err := st.Get("../etc"); err == nil {
		t.Fatal("path in a pool name accepted")
	}
	if _, err := st.Get("nope"); err == nil {
		t.Fatal("missing pool read")
	}
	// A link planted in place of a pool file is not followed.
	target := filepath.Join(t.TempDir(), "other.json")
	os.WriteFile(target, []byte(`{"name":"linked","size":1}`), 0o600)
	if err := os.Symlink(target, filepath.Join(st.Dir(), "linked.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get("linked"); err == nil {
		t.Fatal("followed a symlink")
	}
	// A file naming another pool is refused.
	os.WriteFile(filepath.Join(st.Dir(), "twin.json"), []byte(`{"name":"evals","size":1}`), 0o600)
	if _, err := st.Get("twin"); err == nil {
		t.Fatal("file for another pool accepted")
	}
	if err := st.Delete("evals"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get("evals"); err == nil {
		t.Fatal("deleted pool still there")
	}
}

func TestOpenStoreRefusesAnOpenDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "open")
	os.Mkdir(dir, 0o777)
	os.Chmod(dir, 0o777)
	if _, err := OpenStore(dir); err == nil {
		t.Fatal("world-writable state directory accepted")
	}
	if _, err := OpenStore("relative"); err == nil {
		t.Fatal("relative state directory accepted")
	}
}

func TestReconcileStoppingFinishesCreatesAndCountsNoFailure(t *testing.T) {
	b := newFake()
	ctx, cancel := context.WithCancel(context.Background())
	b.createFn = func(Spec) error {
		cancel() // the refiller is told to stop while a member is being made
		return nil
	}
	st := newStore(t)
	r := &Refiller{Backend: b, Store: st, Parallel: 1}
	got, _ := r.Reconcile(ctx, Spec{Name: "p", Size: 3})
	if got.Failing != 0 || got.LastError != "" || b.count(StateReady) != 1 || b.creates != 1 {
		t.Fatalf("status %+v, ready %d, creates %d", got, b.count(StateReady), b.creates)
	}
}

func TestServeDrainsARemovedPool(t *testing.T) {
	b := newFake()
	st := newStore(t)
	r := &Refiller{Backend: b, Store: st}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	specs := []Spec{{Name: "p", Kind: KindTools, Size: 2}}
	done := make(chan error)
	go func() {
		done <- r.Serve(ctx, func() ([]Spec, error) { mu.Lock(); defer mu.Unlock(); return slices.Clone(specs), nil }, 10*time.Millisecond)
	}()
	waitFor(t, func() bool { return b.count(StateReady) == 2 })
	m, _, err := Claim(ctx, b, "p", 0)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return b.count(StateReady) == 2 })
	mu.Lock()
	specs = nil // podbot pool rm
	mu.Unlock()
	waitFor(t, func() bool { return b.count(StateReady) == 0 })
	if b.count(StateClaimed) != 1 {
		t.Fatalf("claimed member %s removed by the drain", m.ID)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for t0 := time.Now(); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Since(t0) > 10*time.Second {
			t.Fatal("condition not met in 10s")
		}
	}
}

// TestReconcileShrinksTheSameWayEverywhere: surplus goes newest first
// whatever order the backend lists members in, so two refillers shrinking
// a pool at once remove the same members and leave the size ready; a
// member seen starting (one being made, or taken by another refiller to
// be removed) costs no ready member its place.
func TestReconcileShrinksTheSameWayEverywhere(t *testing.T) {
	for range 20 {
		b := newFake()
		now := time.Now()
		r := &Refiller{Backend: b, Store: newStore(t), Now: func() time.Time { return now }}
		spec := Spec{Name: "p", Kind: KindTools, Size: 7}
		if _, err := r.Reconcile(context.Background(), spec); err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			b.set(fmt.Sprint(i+1), StateReady, now.Add(-time.Duration(i+1)*time.Minute))
		}
		b.set("7", StateStarting, now)
		spec.Size = 2
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.Reconcile(context.Background(), spec)
			}()
		}
		wg.Wait()
		ms, _ := b.Members(context.Background(), "p")
		var left []string
		for _, m := range ms {
			left = append(left, m.ID)
		}
		slices.Sort(left)
		if !slices.Equal(left, []string{"5", "6", "7"}) {
			t.Fatalf("left %v after two refillers shrank 6 ready and 1 starting to 2; want the two oldest ready, 5 and 6, and the starting 7", left)
		}
	}
}
