package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// fakeBackend keeps members in memory; Take is a compare-and-swap under a
// mutex, as the engine's unpause is.
type fakeBackend struct {
	mu       sync.Mutex
	members  map[string]*Member
	next     int
	createFn func(spec Spec) error
	creates  int
	removed  []string
	now      func() time.Time
}

func newFake() *fakeBackend {
	return &fakeBackend{members: map[string]*Member{}, now: time.Now}
}

func (f *fakeBackend) Members(_ context.Context, pool string) ([]Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Member
	for _, m := range f.members {
		if m.Pool == pool {
			out = append(out, *m)
		}
	}
	return out, nil
}

func (f *fakeBackend) Create(_ context.Context, spec Spec) (Member, error) {
	f.mu.Lock()
	f.creates++
	fn := f.createFn
	f.mu.Unlock()
	if fn != nil {
		if err := fn(spec); err != nil {
			return Member{}, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	m := &Member{Pool: spec.Name, ID: fmt.Sprint(f.next), Name: fmt.Sprintf("m%d", f.next), State: StateReady, Created: f.now()}
	f.members[m.ID] = m
	return *m, nil
}

func (f *fakeBackend) Take(_ context.Context, m Member) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.members[m.ID]
	if !ok || cur.State != StateReady {
		return fmt.Errorf("%w: %s", ErrTaken, m.Name)
	}
	cur.State = StateClaimed
	return nil
}

func (f *fakeBackend) Remove(ctx context.Context, m Member) error {
	if m.State == StateReady {
		if err := f.Take(ctx, m); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur, ok := f.members[m.ID]; ok && cur.State == StateClaimed && m.State == StateClaimed {
		return errors.New("removing a claimed member")
	}
	delete(f.members, m.ID)
	f.removed = append(f.removed, m.ID)
	return nil
}

func (f *fakeBackend) set(id, state string, created time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.members[id].State = state
	if !created.IsZero() {
		f.members[id].Created = created
	}
}

func (f *fakeBackend) count(state string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, m := range f.members {
		if m.State == state {
			n++
		}
	}
	return n
}
