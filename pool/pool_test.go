package pool

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/podbot/podbot/errdefs"
)

func fill(t *testing.T, b *fakeBackend, spec Spec) {
	t.Helper()
	for range spec.Size {
		if _, err := b.Create(context.Background(), spec); err != nil {
			t.Fatal(err)
		}
	}
}

func TestClaimHandsEachMemberOutOnce(t *testing.T) {
	b := newFake()
	fill(t, b, Spec{Name: "p", Size: 8})
	var (
		mu   sync.Mutex
		got  = map[string]int{}
		empt int
		wg   sync.WaitGroup
	)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, _, err := Claim(context.Background(), b, "p", 0)
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, ErrEmpty) {
				empt++
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			got[m.ID]++
		}()
	}
	wg.Wait()
	if len(got) != 8 || empt != 24 {
		t.Fatalf("claimed %d distinct members, %d empty; want 8 and 24", len(got), empt)
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("member %s handed out %d times", id, n)
		}
	}
}

func TestClaimEmptyIsTyped(t *testing.T) {
	_, _, err := Claim(context.Background(), newFake(), "p", 0)
	var ee *EmptyError
	if !errors.As(err, &ee) || !errors.Is(err, ErrEmpty) || !errors.Is(err, errdefs.ErrNotFound) || ee.Pool != "p" {
		t.Fatalf("err = %v", err)
	}
}

func TestClaimWaitsForAMember(t *testing.T) {
	b := newFake()
	go func() {
		time.Sleep(120 * time.Millisecond)
		b.Create(context.Background(), Spec{Name: "p"})
	}()
	m, waited, err := Claim(context.Background(), b, "p", 5*time.Second)
	if err != nil || !waited || m.ID == "" {
		t.Fatalf("m=%+v waited=%v err=%v", m, waited, err)
	}
	_, _, err = Claim(context.Background(), b, "p", 60*time.Millisecond)
	var ee *EmptyError
	if !errors.As(err, &ee) || ee.Waited <= 0 {
		t.Fatalf("err = %v", err)
	}
}

func TestClaimHonoursCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Claim(ctx, newFake(), "p", time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestSpecCheck(t *testing.T) {
	for _, s := range []Spec{
		{Name: "", Size: 1}, {Name: "UPPER"}, {Name: "-x"}, {Name: "a/b"}, {Name: "a.b"},
		{Name: "ok", Kind: "vm"}, {Name: "ok", Size: -1}, {Name: "ok", Size: MaxSize + 1},
		{Name: "ok", MemoryBytes: -1}, {Name: "abcdefghijklmnopqrstuvwxy"},
	} {
		if err := s.Check(); !errors.Is(err, errdefs.ErrConfig) {
			t.Errorf("%+v: err = %v", s, err)
		}
	}
	s := Spec{Name: "evals-1", Size: 4}
	if err := s.Check(); err != nil || s.Kind != KindTools {
		t.Fatalf("%+v: %v", s, err)
	}
}

func FuzzValidName(f *testing.F) {
	for _, s := range []string{"evals", "a-b", "../x", "a\x00", "", "A"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidName(s) != nil {
			return
		}
		for _, c := range s {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				t.Fatalf("%q accepted with %q", s, c)
			}
		}
		if len(s) == 0 || len(s) > 24 || s[0] == '-' {
			t.Fatalf("%q accepted", s)
		}
	})
}

// claimerBackend claims in one call, as a Kubernetes backend would.
type claimerBackend struct {
	*fakeBackend
	calls int
}

func (c *claimerBackend) ClaimMember(_ context.Context, pool string, _ time.Duration) (Member, bool, error) {
	c.calls++
	return Member{Pool: pool, ID: "bound", State: StateClaimed}, false, nil
}

func TestClaimUsesAClaimer(t *testing.T) {
	b := &claimerBackend{fakeBackend: newFake()}
	m, _, err := Claim(context.Background(), b, "p", 0)
	if err != nil || m.ID != "bound" || b.calls != 1 {
		t.Fatalf("%+v %v calls=%d", m, err, b.calls)
	}
}

// scanningBackend names members from a stale snapshot (as a scan of host
// records may: members claimed since, members it never saw) and counts
// the lists it needed.
type scanningBackend struct {
	*fakeBackend
	mu      sync.Mutex
	snap    []Member
	lists   int
	scanErr error
}

func (s *scanningBackend) Scan(context.Context, string) ([]Member, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Member(nil), s.snap...), s.scanErr
}

func (s *scanningBackend) Members(ctx context.Context, pool string) ([]Member, error) {
	s.mu.Lock()
	s.lists++
	s.mu.Unlock()
	return s.fakeBackend.Members(ctx, pool)
}

// TestClaimScansFirst: a claim takes a scanned member without listing;
// concurrent claimers from one stale scan still get each member once, and
// members the scan missed are found by the list; a failing scan falls
// back to the list.
func TestClaimScansFirst(t *testing.T) {
	f := newFake()
	fill(t, f, Spec{Name: "p", Size: 8})
	all, _ := f.Members(context.Background(), "p")
	b := &scanningBackend{fakeBackend: f, snap: append(all[:4:4], Member{Pool: "p", ID: "gone", Name: "gone", State: StateReady})}
	if _, _, err := Claim(context.Background(), b, "p", 0); err != nil || b.lists != 0 {
		t.Fatalf("claim with a good scan: %v, %d lists; want none", err, b.lists)
	}
	var (
		mu  sync.Mutex
		got = map[string]int{}
		wg  sync.WaitGroup
	)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, _, err := Claim(context.Background(), b, "p", 0)
			if err != nil {
				return
			}
			mu.Lock()
			got[m.ID]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(got) != 7 {
		t.Fatalf("claimed %d distinct members; want the 7 left", len(got))
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("member %s handed out %d times", id, n)
		}
	}
	fill(t, f, Spec{Name: "p", Size: 1})
	b.scanErr = errors.New("unreadable")
	if _, _, err := Claim(context.Background(), b, "p", 0); err != nil {
		t.Fatalf("claim after a failing scan: %v", err)
	}
}
