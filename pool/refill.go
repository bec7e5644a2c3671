package pool

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// Refill defaults.
const (
	// DefaultStartGrace is how long a member may stay StateStarting before
	// it counts as half-made (its maker died) and is removed.
	DefaultStartGrace = 2 * time.Minute
	// DefaultParallel is how many members a refiller creates at once.
	DefaultParallel = 2
	// createTimeout bounds one member's create, which runs on a context
	// detached from the refiller's: a stopping refiller finishes (or
	// cleans up) the members it is making instead of leaving them half-made.
	createTimeout = 2 * time.Minute
	// minBackoff and maxBackoff bound the wait after failed creates.
	minBackoff = 2 * time.Second
	maxBackoff = 5 * time.Minute
)

// Refiller keeps pools at size on one backend.
type Refiller struct {
	// Backend owns the members.
	Backend Backend
	// Store holds the specs and receives the statuses.
	Store *Store
	// MaxAge replaces ready members older than this; 0 keeps them.
	MaxAge time.Duration
	// StartGrace is DefaultStartGrace when zero.
	StartGrace time.Duration
	// Parallel is DefaultParallel when zero.
	Parallel int
	// Now is time.Now when nil.
	Now func() time.Time
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

func (r *Refiller) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Refiller) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Backoff is the wait after failing creates in a row: 2 s doubling up to
// five minutes.
func Backoff(failing int) time.Duration {
	if failing <= 0 {
		return 0
	}
	d := minBackoff
	for i := 1; i < failing && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// Reconcile brings pool spec to size once: it removes failed, half-made,
// over-age and surplus members, then creates the missing ones (unless the
// pool is backing off after failures), and writes and returns the pool's
// status. The error is the first create or removal failure; the status
// carries it too.
func (r *Refiller) Reconcile(ctx context.Context, spec Spec) (Status, error) {
	prev, err := r.Store.GetStatus(spec.Name)
	if err != nil {
		return prev, err
	}
	st := Status{Failing: prev.Failing, LastError: prev.LastError, LastErrorAt: prev.LastErrorAt, RetryAt: prev.RetryAt}
	ms, err := r.Backend.Members(ctx, spec.Name)
	if err != nil {
		return st, err
	}
	grace := r.StartGrace
	if grace <= 0 {
		grace = DefaultStartGrace
	}
	now := r.now()
	var errs []error
	var ready []Member
	for _, m := range ms {
		switch {
		case m.State == StateClaimed:
			st.Claimed++
		case m.State == StateFailed, m.State == StateStarting && now.Sub(m.Created) > grace,
			m.State == StateReady && r.MaxAge > 0 && now.Sub(m.Created) > r.MaxAge:
			r.logger().Info("replacing pool member", "pool", spec.Name, "member", m.Name, "state", m.State, "age", now.Sub(m.Created).Round(time.Second))
			if err := r.Backend.Remove(ctx, m); err != nil && !errors.Is(err, ErrTaken) {
				errs = append(errs, err)
			}
		case m.State == StateStarting:
			st.Starting++
		case m.State == StateReady:
			ready = append(ready, m)
		}
	}
	// Surplus after a resize down: the newest go first (the oldest age out
	// anyway), in one order for every refiller, so that two reconciling
	// the same listing at once (pool resize's own pass and pool serve)
	// pick the same members. Only ready members count: a starting one may
	// be one another refiller is removing (taken, so running, not yet
	// gone), and a ready member is never given up for it.
	slices.SortFunc(ready, func(a, b Member) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	for len(ready) > spec.Size {
		m := ready[0]
		ready = ready[1:]
		if err := r.Backend.Remove(ctx, m); err != nil && !errors.Is(err, ErrTaken) {
			errs = append(errs, err)
		}
	}
	st.Ready = len(ready)
	missing := spec.Size - st.Ready - st.Starting
	if missing > 0 && (st.RetryAt.IsZero() || !now.Before(st.RetryAt)) {
		made, cerr := r.create(ctx, spec, missing)
		st.Ready += made
		switch {
		case cerr != nil && ctx.Err() != nil:
			// Stopping: not the pool's failure.
			errs = append(errs, cerr)
		case cerr != nil:
			st.Failing++
			st.LastError, st.LastErrorAt = cerr.Error(), r.now()
			st.RetryAt = st.LastErrorAt.Add(Backoff(st.Failing))
			r.logger().Warn("pool member create failed; backing off", "pool", spec.Name, "failing", st.Failing,
				"retry_in", Backoff(st.Failing), "error", cerr)
			errs = append(errs, cerr)
		default:
			st.Failing, st.RetryAt = 0, time.Time{}
		}
	}
	if len(errs) > 0 && st.LastError == "" && ctx.Err() == nil {
		st.LastError, st.LastErrorAt = errors.Join(errs...).Error(), r.now()
	}
	st.UpdatedAt = r.now()
	if err := r.Store.PutStatus(spec.Name, st); err != nil {
		errs = append(errs, err)
	}
	return st, errors.Join(errs...)
}

// create makes n members, Parallel at a time, and returns how many it made
// and the first error. After a failure no further create starts.
func (r *Refiller) create(ctx context.Context, spec Spec, n int) (int, error) {
	par := r.Parallel
	if par <= 0 {
		par = DefaultParallel
	}
	var (
		mu       sync.Mutex
		made     int
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, par)
	)
	for range n {
		sem <- struct{}{}
		mu.Lock()
		stop := firstErr != nil || ctx.Err() != nil
		mu.Unlock()
		if stop {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
			defer cancel()
			_, err := r.Backend.Create(cctx, spec)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			made++
		}()
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil && made < n {
		firstErr = ctx.Err()
	}
	return made, firstErr
}

// Serve reconciles every pool specs returns, every interval, until ctx
// ends. Errors are logged and kept in the pools' statuses; Serve returns
// only ctx's error.
//
// A pool that disappears from specs (podbot pool rm while a pass was
// making its members) is drained once: its unclaimed members are removed.
func (r *Refiller) Serve(ctx context.Context, specs func() ([]Spec, error), interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	seen := map[string]bool{}
	for {
		list, err := specs()
		if err != nil {
			r.logger().Warn("cannot read the pools", "error", err)
		} else {
			now := map[string]bool{}
			for _, s := range list {
				now[s.Name] = true
			}
			for name := range seen {
				if !now[name] {
					if err := r.Drain(ctx, name); err != nil && ctx.Err() == nil {
						r.logger().Warn("draining a removed pool", "pool", name, "error", err)
					}
				}
			}
			seen = now
		}
		for _, s := range list {
			if ctx.Err() != nil {
				break
			}
			if _, err := r.Reconcile(ctx, s); err != nil && ctx.Err() == nil {
				r.logger().Warn("pool refill", "pool", s.Name, "error", err)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Drain removes every unclaimed member of pool name (ready ones are taken
// first, so no claimer gets one meanwhile); claimed ones are left alone.
func (r *Refiller) Drain(ctx context.Context, name string) error {
	ms, err := r.Backend.Members(ctx, name)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range ms {
		if m.State == StateClaimed {
			continue
		}
		if err := r.Backend.Remove(ctx, m); err != nil && !errors.Is(err, ErrTaken) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
