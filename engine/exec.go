package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/podbot/podbot/errdefs"
)

// Size is a terminal size in character cells.
type Size struct {
	Height, Width uint
}

// ExecOptions describes one command run in a running container.
//
// Exec has three modes. Detached (Detach set): no stdin, no TTY, output
// discarded, Exec waits for the command to finish. Attached with a TTY (TTY set): one raw stream,
// Stdout receives everything, resizes are forwarded. Protocol (TTY unset):
// Stdout receives exactly the container's stdout bytes and Stderr its
// stderr, demultiplexed; when Stdin reaches EOF the write side of the
// stream is half-closed so the command sees EOF. Putting the local terminal
// in raw mode is the caller's job.
type ExecOptions struct {
	// Cmd is the command and its arguments; it must not be empty.
	Cmd []string
	// Env holds KEY=VALUE pairs added to the container's environment.
	Env []string
	// WorkDir and User override the container's defaults when set.
	WorkDir, User string
	// TTY allocates a pseudo-terminal (attached mode only).
	TTY bool
	// Stdin, when set, is copied to the command; nil means no stdin.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output; nil discards it.
	Stdout, Stderr io.Writer
	// Detach runs the command without streams and waits for it to finish.
	Detach bool
	// InitialSize, when non-zero, is sent once the TTY exec has started.
	InitialSize Size
	// Resize delivers later terminal sizes (TTY only) until it is closed or
	// the command ends.
	Resize <-chan Size
	// OnResizeError receives a failed resize; resizes are never fatal.
	// Nil logs it with the connection's logger.
	OnResizeError func(error)
}

// Exec runs a command in a running container and returns its exit status:
// 0..255 as reported, a negative code as 1, a code above 255 as 255. An
// exec the engine reports finished without an exit code is an error with
// reason errdefs.ErrExecFailed. If ctx is cancelled the stream is closed
// and the cancellation is returned; the engine decides whether the command
// itself keeps running. A Stdin read that is still blocked when
// the command ends is abandoned; it ends at its next read.
func (c *Conn) Exec(ctx context.Context, containerID string, opts ExecOptions) (int, error) {
	if err := validateExec(opts); err != nil {
		return 0, &errdefs.ContainerError{Op: "exec", Endpoint: c.ep.String(), Container: containerID, Reason: errdefs.ErrInvalidValue, Msg: err.Error()}
	}
	if opts.Detach {
		// Podman 4.3 keeps reporting a detached exec as running long after
		// it exited, so a detached exec is run attached with no stdin, no
		// TTY and its output discarded: no streams reach the caller, and
		// its end is seen the moment the stream closes, on both engines.
		opts = ExecOptions{Cmd: opts.Cmd, Env: opts.Env, WorkDir: opts.WorkDir, User: opts.User}
	}
	create := container.ExecOptions{
		User:         opts.User,
		Tty:          opts.TTY,
		AttachStdin:  opts.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
		Env:          opts.Env,
		WorkingDir:   opts.WorkDir,
		Cmd:          opts.Cmd,
	}
	resp, err := c.api.ContainerExecCreate(ctx, containerID, create)
	if err != nil {
		return 0, c.classify("exec", containerID, err)
	}
	if err := c.execAttached(ctx, containerID, resp.ID, opts.TTY, opts); err != nil {
		return 0, err
	}
	return c.execExitCode(ctx, containerID, resp.ID)
}

func validateExec(opts ExecOptions) error {
	if len(opts.Cmd) == 0 || opts.Cmd[0] == "" {
		return errors.New("no command given")
	}
	for _, kv := range opts.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("environment entry %q is not KEY=VALUE", truncate(kv, 64))
		}
	}
	return nil
}

// execAttached pumps the streams of a started exec: one goroutine per
// direction, stdin half-closed after EOF, output demultiplexed unless TTY.
func (c *Conn) execAttached(ctx context.Context, containerID, execID string, tty bool, opts ExecOptions) error {
	hr, err := c.api.ContainerExecAttach(ctx, execID, container.ExecAttachOptions{Tty: tty})
	if err != nil {
		return c.classify("exec", containerID, err)
	}
	defer hr.Close()

	stdout, stderr := opts.Stdout, opts.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	done := make(chan struct{})
	defer close(done)

	if tty {
		go c.forwardResizes(ctx, execID, opts, done)
	}

	outputDone := make(chan error, 1)
	go func() {
		var err error
		if tty {
			_, err = io.Copy(stdout, hr.Reader)
		} else {
			_, err = stdcopy.StdCopy(stdout, stderr, hr.Reader)
		}
		outputDone <- err
	}()

	var inputDone chan error
	if opts.Stdin != nil {
		inputDone = make(chan error, 1)
		go func() {
			_, err := io.Copy(hr.Conn, opts.Stdin)
			if cerr := hr.CloseWrite(); err == nil {
				err = cerr
			}
			inputDone <- err
		}()
	}

	for {
		select {
		case err := <-outputDone:
			if err != nil && ctx.Err() == nil {
				return c.classify("exec output", containerID, err)
			}
			if ctx.Err() != nil {
				return c.classify("exec", containerID, ctx.Err())
			}
			return nil
		case err := <-inputDone:
			inputDone = nil
			if err != nil {
				// The command may already have exited and closed its side;
				// its exit status says what happened.
				c.logger().Debug("exec stdin copy ended", "container", containerID, "error", err)
			}
		case <-ctx.Done():
			hr.Close()
			return c.classify("exec", containerID, ctx.Err())
		}
	}
}

// forwardResizes sends the initial size (retrying briefly while the exec
// starts) and then every size from opts.Resize until done.
func (c *Conn) forwardResizes(ctx context.Context, execID string, opts ExecOptions, done <-chan struct{}) {
	report := func(err error) {
		if opts.OnResizeError != nil {
			opts.OnResizeError(err)
			return
		}
		c.logger().Warn("terminal resize failed", "exec", execID, "error", err)
	}
	if opts.InitialSize != (Size{}) {
		var err error
		delay := 10 * time.Millisecond
		for attempt := 0; attempt < 4; attempt++ {
			if err = c.resize(ctx, execID, opts.InitialSize); err == nil {
				break
			}
			select {
			case <-done:
				return
			case <-time.After(delay):
			}
			delay *= 2
		}
		if err != nil {
			report(err)
		}
	}
	for {
		select {
		case <-done:
			return
		case s, ok := <-opts.Resize:
			if !ok {
				return
			}
			if err := c.resize(ctx, execID, s); err != nil {
				report(err)
			}
		}
	}
}

func (c *Conn) resize(ctx context.Context, execID string, s Size) error {
	if s.Height == 0 || s.Width == 0 {
		return nil
	}
	if err := c.api.ContainerExecResize(ctx, execID, container.ResizeOptions{Height: s.Height, Width: s.Width}); err != nil {
		return c.classify("exec resize", execID, err)
	}
	return nil
}

// execExitCode waits until the engine reports the exec finished and returns
// its clamped exit status.
func (c *Conn) execExitCode(ctx context.Context, containerID, execID string) (int, error) {
	delay := 5 * time.Millisecond
	for {
		st, err := c.execInspect(ctx, execID)
		if err != nil {
			return 0, c.classify("exec inspect", containerID, err)
		}
		if !st.Running {
			if st.ExitCode == nil {
				return 0, &errdefs.ContainerError{Op: "exec", Endpoint: c.ep.String(), Container: containerID, Reason: errdefs.ErrExecFailed,
					Msg: fmt.Sprintf("the engine reports exec %s of %q finished without an exit code", execID, strings.Join(truncateArgs(st.ProcessConfig), " "))}
			}
			return errdefs.ClampExitCode(*st.ExitCode), nil
		}
		select {
		case <-ctx.Done():
			return 0, c.classify("exec", containerID, ctx.Err())
		case <-time.After(delay):
		}
		if delay < 200*time.Millisecond {
			delay *= 2
		}
	}
}

func truncateArgs(pc *execProcessConfig) []string {
	if pc == nil {
		return nil
	}
	out := []string{truncate(pc.Entrypoint, 64)}
	for i, a := range pc.Arguments {
		if i == 8 {
			out = append(out, "…")
			break
		}
		out = append(out, truncate(a, 64))
	}
	return out
}
