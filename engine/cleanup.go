package engine

import (
	"context"
	"time"
)

// CleanupTimeout bounds cleanup work started by CleanupContext.
const CleanupTimeout = 10 * time.Second

// CleanupContext returns a context for cleanup work (removing a container
// that failed to start, for example) that keeps ctx's values but not its
// cancellation, bounded by CleanupTimeout. Ctrl-C cancels the caller's
// context; the cleanup still runs.
func CleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
}

// removeAfterFailure force-removes a container on a context detached from
// the caller's cancellation. Its own failure is logged, not returned: the
// caller reports the error that made the cleanup necessary.
func (c *Conn) removeAfterFailure(ctx context.Context, idOrName string) {
	cctx, cancel := CleanupContext(ctx)
	defer cancel()
	if err := c.Remove(cctx, idOrName, true); err != nil {
		c.logger().Warn("could not remove container after a failed launch", "container", idOrName, "error", err)
	}
}
