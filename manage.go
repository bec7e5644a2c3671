package podbot

import (
	"context"
	"io"
	"time"

	"github.com/podbot/podbot/engine"
)

// DefaultStopTimeout is how long Stop waits after SIGTERM before the engine
// kills the container.
const DefaultStopTimeout = 10 * time.Second

// StopOptions are the inputs of Stop.
type StopOptions struct {
	// Timeout is the grace period between SIGTERM and SIGKILL; negative
	// means none, zero means DefaultStopTimeout.
	Timeout time.Duration
	// Any allows a container podbot did not create.
	Any bool
}

// Stop resolves ref (see ResolveContainer) and stops the container: SIGTERM,
// then SIGKILL after the timeout. Stopping a stopped container succeeds.
func Stop(ctx context.Context, conn *engine.Conn, ref string, opts StopOptions) (Container, error) {
	c, err := ResolveContainer(ctx, conn, ref, opts.Any)
	if err != nil {
		return Container{}, err
	}
	timeout := opts.Timeout
	switch {
	case timeout == 0:
		timeout = DefaultStopTimeout
	case timeout < 0:
		timeout = 0
	}
	return c, conn.Stop(ctx, c.ID, timeout)
}

// RemoveOptions are the inputs of Remove.
type RemoveOptions struct {
	// Force removes a running container (the engine kills it first).
	Force bool
	// Any allows a container podbot did not create.
	Any bool
}

// Remove resolves ref (see ResolveContainer) and removes the container and
// its anonymous volumes. A running container needs Force.
func Remove(ctx context.Context, conn *engine.Conn, ref string, opts RemoveOptions) (Container, error) {
	c, err := ResolveContainer(ctx, conn, ref, opts.Any)
	if err != nil {
		return Container{}, err
	}
	return c, conn.Remove(ctx, c.ID, opts.Force)
}

// LogsOptions are the inputs of Logs.
type LogsOptions struct {
	// Follow streams new output until the container stops or ctx ends.
	Follow bool
	// Tail shows only this many lines from the end; 0 shows all.
	Tail int
	// Any allows a container podbot did not create.
	Any bool
}

// Logs resolves ref (see ResolveContainer) and copies the container's
// stdout to stdout and its stderr to stderr.
func Logs(ctx context.Context, conn *engine.Conn, ref string, opts LogsOptions, stdout, stderr io.Writer) error {
	c, err := ResolveContainer(ctx, conn, ref, opts.Any)
	if err != nil {
		return err
	}
	return conn.Logs(ctx, c.ID, engine.LogsOptions{Follow: opts.Follow, Tail: opts.Tail}, stdout, stderr)
}
