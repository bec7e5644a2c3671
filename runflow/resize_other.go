//go:build !unix

package runflow

import (
	"context"

	"github.com/podbot/podbot/engine"
)

// WatchSize has no window-change signal to follow on this platform: the
// initial size is all the exec gets.
func WatchSize(ctx context.Context, out any) (<-chan engine.Size, func()) {
	ch := make(chan engine.Size)
	close(ch)
	return ch, func() {}
}
