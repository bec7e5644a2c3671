package tokendaemon

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// watcher runs Options.Watch for a Daemon, again after each failure, and
// tells the daemon's loop when to look at the container.
type watcher struct {
	// wake receives a value after each call of changed and each change of
	// up; it holds one, so a burst of events asks Alive once.
	wake chan struct{}
	// up is true while a stream is open (changed was called since the
	// last start of Watch).
	up atomic.Bool
}

func (w *watcher) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// startWatch runs Watch until ctx ends; stop ends it and waits for it.
func (d *Daemon) startWatch(ctx context.Context) (*watcher, func()) {
	w := &watcher{wake: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { d.follow(ctx, w) })
	return w, func() { cancel(); wg.Wait() }
}

// follow calls Watch until ctx ends, with backoff between failed tries;
// a stream that opened resets the backoff.
func (d *Daemon) follow(ctx context.Context, w *watcher) {
	log := d.opts.Logger
	failures := 0
	for {
		err := d.opts.Watch(ctx, func() {
			if !w.up.Swap(true) {
				log.Debug("following the engine's events for the container")
			}
			w.poke()
		})
		wasUp := w.up.Swap(false)
		if ctx.Err() != nil {
			return
		}
		w.poke()
		if wasUp {
			failures = 0
		}
		failures++
		retry := d.backoff(failures)
		if failures == 1 {
			log.Warn("cannot follow the engine's events for the container; checking it every check interval meanwhile",
				"err", err, "check_interval", d.opts.CheckInterval, "retry_in", retry)
		} else {
			log.Debug("engine event stream still unavailable", "err", err, "attempt", failures, "retry_in", retry)
		}
		if d.opts.Clock.Sleep(ctx, retry) != nil {
			return
		}
	}
}

// wait sleeps until the next refresh is due (untilRefresh), ctx ends, or
// the container should be looked at: every CheckInterval without a
// working event stream, or when the watcher reports a change.
func (d *Daemon) wait(ctx context.Context, w *watcher, untilRefresh time.Duration) error {
	if w == nil {
		return d.opts.Clock.Sleep(ctx, min(untilRefresh, d.opts.CheckInterval))
	}
	dur := untilRefresh
	if !w.up.Load() {
		dur = min(dur, d.opts.CheckInterval)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slept := make(chan error, 1)
	go func() { slept <- d.opts.Clock.Sleep(sctx, dur) }()
	select {
	case <-w.wake:
		cancel()
		<-slept
		return ctx.Err()
	case <-slept:
		return ctx.Err()
	}
}
