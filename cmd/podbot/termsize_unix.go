//go:build unix

package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/podbot/podbot"
)

// watchTerminalSize sends the terminal's size now and after every SIGWINCH
// until stop is called or ctx ends.
func watchTerminalSize(ctx context.Context, out any) (<-chan podbot.TermSize, func()) {
	ch := make(chan podbot.TermSize, 1)
	send := sizeSender(out, ch)
	send()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGWINCH)
	wctx, cancel := context.WithCancel(ctx)
	go func() {
		for {
			select {
			case <-wctx.Done():
				return
			case <-sigs:
				send()
			}
		}
	}()
	return ch, func() {
		signal.Stop(sigs)
		cancel()
	}
}
