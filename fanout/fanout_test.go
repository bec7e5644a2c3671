package fanout

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeSource is a Source whose events the test sends; it counts its runs.
type fakeSource struct {
	runs   atomic.Int32
	events chan string
	fail   chan error
	refuse error // returned at once, before ready, when set
}

func newFakeSource() *fakeSource {
	return &fakeSource{events: make(chan string), fail: make(chan error, 1)}
}

func (f *fakeSource) run(ctx context.Context, ready func(), emit func(string)) error {
	f.runs.Add(1)
	if f.refuse != nil {
		return f.refuse
	}
	ready()
	ready() // a second call is harmless
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-f.fail:
			return err
		case e := <-f.events:
			emit(e)
		}
	}
}

// waitCalls waits until n reaches want.
func waitCalls(t *testing.T, n *atomic.Int32, want int32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for n.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("calls = %d, want %d", n.Load(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestHubSharesOneSource: many watchers share one run of the source; each
// is told once when it joins and then only of the events it matches; the
// source stops with the last watcher, and the next Watch starts it again.
func TestHubSharesOneSource(t *testing.T) {
	src := newFakeSource()
	h := New(src.run)
	ctx, cancel := context.WithCancel(context.Background())
	var a, b, all atomic.Int32
	var wg sync.WaitGroup
	watch := func(match func(string) bool, n *atomic.Int32) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.Watch(ctx, match, func() { n.Add(1) }); !errors.Is(err, context.Canceled) {
				t.Errorf("Watch = %v, want context.Canceled", err)
			}
		}()
	}
	watch(func(e string) bool { return e == "a" }, &a)
	watch(func(e string) bool { return e == "b" }, &b)
	watch(func(string) bool { return true }, &all)
	waitCalls(t, &a, 1)
	waitCalls(t, &b, 1)
	waitCalls(t, &all, 1)
	src.events <- "a"
	src.events <- "a"
	src.events <- "c"
	waitCalls(t, &all, 4)
	if a.Load() != 3 || b.Load() != 1 {
		t.Errorf("a told %d times, b %d; want 3 and 1", a.Load(), b.Load())
	}
	if n := src.runs.Load(); n != 1 {
		t.Errorf("the source ran %d times for three watchers, want 1", n)
	}
	cancel()
	wg.Wait()
	var again atomic.Int32
	ctx2, cancel2 := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Watch(ctx2, func(string) bool { return true }, func() { again.Add(1) }) }()
	waitCalls(t, &again, 1)
	if n := src.runs.Load(); n != 2 {
		t.Errorf("the source ran %d times, want a new run after the last watcher left", n)
	}
	cancel2()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Watch = %v", err)
	}
}

// TestHubSourceFailure: when the source fails every watcher gets its
// error, and a refused source fails Watch without a call to changed.
func TestHubSourceFailure(t *testing.T) {
	src := newFakeSource()
	h := New(src.run)
	boom := errors.New("stream broke")
	var told atomic.Int32
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			errs <- h.Watch(context.Background(), func(string) bool { return true }, func() { told.Add(1) })
		}()
	}
	waitCalls(t, &told, 2)
	src.fail <- boom
	for range 2 {
		if err := <-errs; !errors.Is(err, boom) {
			t.Errorf("Watch = %v, want the source's error", err)
		}
	}
	refused := errors.New("refused")
	src2 := newFakeSource()
	src2.refuse = refused
	called := false
	if err := New(src2.run).Watch(context.Background(), func(string) bool { return true }, func() { called = true }); !errors.Is(err, refused) || called {
		t.Errorf("Watch on a refused source = %v (changed called: %v)", err, called)
	}
}
