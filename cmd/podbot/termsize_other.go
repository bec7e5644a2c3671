//go:build !unix

package main

import (
	"context"

	"github.com/podbot/podbot"
)

// watchTerminalSize sends the terminal's size once; this platform has no
// SIGWINCH, so later resizes are not passed on.
func watchTerminalSize(_ context.Context, out any) (<-chan podbot.TermSize, func()) {
	ch := make(chan podbot.TermSize, 1)
	sizeSender(out, ch)()
	return ch, func() {}
}
