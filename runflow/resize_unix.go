//go:build unix

package runflow

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/podbot/podbot/engine"
)

// WatchSize delivers the size of the terminal behind out after every
// SIGWINCH until stop is called or ctx ends. The channel is closed when the
// watch ends. A size not yet taken is replaced by a newer one.
func WatchSize(ctx context.Context, out any) (<-chan engine.Size, func()) {
	ch := make(chan engine.Size, 1)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGWINCH)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		for {
			select {
			case <-wctx.Done():
				return
			case <-sigs:
				if sz, ok := Size(out); ok {
					offerSize(ch, sz)
				}
			}
		}
	}()
	return ch, func() {
		signal.Stop(sigs)
		cancel()
		<-done
	}
}
