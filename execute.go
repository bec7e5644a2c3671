package podbot

import (
	"context"
	"io"
	"log/slog"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
)

// TermSize is a terminal size in character cells (rows and columns).
type TermSize = engine.Size

// ExecOptions are the inputs of Exec.
type ExecOptions struct {
	// Cmd is the command and its arguments; it must not be empty.
	Cmd []string
	// Env are extra environment entries (K=V).
	Env []string
	// WorkingDir is the working directory; empty is the container's.
	WorkingDir string
	// User is the user (name, uid, uid:gid); empty is the container's.
	User string
	// TTY allocates a pseudo-terminal: one output stream, terminal line
	// discipline. Without it stdout carries the command's stdout bytes only.
	TTY bool
	// Detach runs the command with no stdin and its output discarded, and
	// waits for it to finish.
	Detach bool
	// Stdin, when set, is copied to the command; its EOF half-closes the
	// command's stdin. A copy blocked reading Stdin may outlive Exec.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output (nil discards). With
	// TTY everything goes to Stdout.
	Stdout, Stderr io.Writer
	// InitialSize, when non-zero, is applied to a TTY exec as soon as it
	// starts; Resize delivers later sizes. A failed resize is logged, never
	// fatal.
	InitialSize TermSize
	Resize      <-chan TermSize
	// Any allows a container podbot did not create.
	Any bool
	// Logger receives diagnostics (failed resizes); nil discards them.
	Logger *slog.Logger
}

// Exec resolves ref (see ResolveContainer) and runs a command in the
// running container. It returns the command's exit status clamped to
// 0..255 (see errdefs.ClampExitCode); a command killed by a signal reports
// 128+signal. An error means the exec itself failed, not the command.
func Exec(ctx context.Context, conn *engine.Conn, ref string, opts ExecOptions) (int, error) {
	if len(opts.Cmd) == 0 {
		return 0, &errdefs.ContainerError{Op: "exec", Container: ref, Reason: errdefs.ErrInvalidValue,
			Msg: "no command given", Hint: "put the command after the container: podbot exec CONTAINER -- CMD..."}
	}
	c, err := ResolveContainer(ctx, conn, ref, opts.Any)
	if err != nil {
		return 0, err
	}
	if !c.Running() {
		return 0, &errdefs.ContainerError{Op: "exec", Container: c.Name, Endpoint: conn.Endpoint().String(),
			Reason: errdefs.ErrConflict, Msg: "the container is " + c.State + ", not running",
			Hint: "create a new sandbox with `podbot create`"}
	}
	return execIn(ctx, conn, c.ID, opts)
}

// execIn runs the exec in container id through the engine. A detached
// exec is run attached with no stdin and its output discarded, so the call
// returns when the command ends: Podman 4.3 never marks an exec started
// with the API's detach flag as finished, and refuses an attach with no
// streams.
func execIn(ctx context.Context, conn *engine.Conn, id string, opts ExecOptions) (int, error) {
	eo := engine.ExecOptions{
		Cmd: opts.Cmd, Env: opts.Env, WorkDir: opts.WorkingDir, User: opts.User,
		TTY: opts.TTY, Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr,
	}
	if opts.Detach {
		eo.TTY, eo.Stdin, eo.Stdout, eo.Stderr = false, nil, nil, nil
	}
	if eo.TTY {
		eo.InitialSize, eo.Resize = opts.InitialSize, opts.Resize
	}
	if opts.Logger != nil {
		logger := opts.Logger
		eo.OnResizeError = func(err error) { logger.Warn("could not resize the exec's terminal", "error", err) }
	} else {
		eo.OnResizeError = func(error) {}
	}
	return conn.Exec(ctx, id, eo)
}
