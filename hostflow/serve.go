package hostflow

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/podbot/podbot/acp"
	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
)

// Execer runs one command in a running container. *engine.Conn satisfies it.
type Execer interface {
	Exec(ctx context.Context, containerID string, opts engine.ExecOptions) (int, error)
}

// Options are the inputs of Serve.
type Options struct {
	// ContainerID names the running container the server runs in.
	ContainerID string
	// Cmd is the server command and its arguments; it must not be empty.
	Cmd []string
	// Env holds extra KEY=VALUE pairs for the server.
	Env []string
	// WorkDir and User override the container's defaults when set.
	WorkDir, User string
	// Policy is what the bridge lets through (see acp.Policy).
	Policy acp.Policy
	// Stdin is the client's input (the IDE writing to podbot's stdin).
	Stdin io.Reader
	// Stdout is the client's output: it receives the server's protocol
	// bytes and nothing else.
	Stdout io.Writer
	// Stderr, when set, receives the server's stderr bytes unchanged. When
	// nil, each stderr line is logged to Logger instead.
	Stderr io.Writer
	// Logger receives diagnostics and, when Stderr is nil, the server's
	// stderr lines; nil discards them.
	Logger *slog.Logger
	// Redactor masks its secrets in the server's stderr, on the way to
	// Stderr or to the log, before the stream is cut into lines: a secret
	// split across writes or spanning lines is masked whole. nil masks
	// nothing here (the log handler may still mask).
	Redactor *creds.Redactor
}

// StreamExecer starts a protocol-mode exec whose streams the caller
// drives. *engine.Conn satisfies it; Serve prefers it to Execer, since
// the bridge then reads the engine's stream and writes to it directly.
type StreamExecer interface {
	ExecStream(ctx context.Context, containerID string, opts engine.StreamOptions) (*engine.ExecStream, error)
}

// errServerExited ends a write to the server's stdin after the server exited.
var errServerExited = errors.New("the protocol server exited")

// Serve starts opts.Cmd in the container without a TTY and bridges
// opts.Stdin and opts.Stdout to it through opts.Policy until the server's
// output ends. It returns the server's exit status (0..255; a server killed
// by a signal reports 128+signal). An error means the exec or the bridge
// failed, or ctx ended; the status is then meaningless.
//
// Serve never writes to opts.Stdout except to forward the server's frames
// (and, under the ACP policy, the answers the policy gives on the server's
// behalf). A read of opts.Stdin that is still blocked when Serve returns is
// abandoned; it ends at the reader's next EOF or error.
func Serve(ctx context.Context, ex Execer, opts Options) (int, error) {
	if err := opts.validate(); err != nil {
		return 0, err
	}
	if err := opts.Policy.Validate(); err != nil {
		return 0, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.Policy.Logger == nil {
		opts.Policy.Logger = logger
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	stderr := opts.Stderr
	var lines *lineLogger
	if stderr == nil {
		lines = newLineLogger(ctx, logger, opts.Cmd[0])
		stderr = lines
	}
	var masked *creds.RedactingWriter
	if opts.Redactor != nil {
		masked = creds.NewRedactingWriter(stderr, opts.Redactor)
		stderr = masked
	}
	// flushStderr writes out what the stderr writers hold back, once the
	// server's output has ended.
	flushStderr := func() {
		if masked != nil {
			_ = masked.Close() // the held-back tail, masked
		}
		if lines != nil {
			lines.flush()
		}
	}
	if sx, ok := ex.(StreamExecer); ok {
		return serveStream(ctx, sx, opts, stderr, flushStderr)
	}

	// The client's frames wait in a bounded batching pipe so a burst reaches
	// the engine in few writes; the server's output goes through a
	// synchronous pipe that holds no bytes of its own.
	in := newBatchPipe(stdinBuffer)
	outR, outW := io.Pipe()

	type execResult struct {
		code int
		err  error
	}
	done := make(chan execResult, 1)
	go func() {
		code, err := ex.Exec(ctx, opts.ContainerID, engine.ExecOptions{
			Cmd: opts.Cmd, Env: opts.Env, WorkDir: opts.WorkDir, User: opts.User,
			Stdin: in, Stdout: outW, Stderr: stderr,
		})
		// The server's output has ended: the bridge drains what it holds
		// and returns; writes meant for the server fail from now on.
		outW.Close()
		in.CloseRead(errServerExited)
		flushStderr()
		done <- execResult{code, err}
	}()

	berr := acp.Bridge(ctx, opts.Policy, opts.Stdin, in, outR, opts.Stdout)
	if berr != nil {
		cancel()
	}
	// Unblock an exec still writing output nobody reads any more.
	outR.CloseWithError(errBridgeStopped)
	res := <-done
	switch {
	case berr != nil:
		return 0, berr
	case res.err != nil:
		return 0, res.err
	}
	return res.code, nil
}

// serveStream is Serve over an exec whose streams the bridge drives
// itself: the bridge reads the server's stdout as it is demultiplexed from
// the engine's stream and writes the client's frames straight onto it, with
// no copying goroutine, pipe or extra buffer in either direction.
func serveStream(ctx context.Context, sx StreamExecer, opts Options, stderr io.Writer, flushStderr func()) (int, error) {
	st, err := sx.ExecStream(ctx, opts.ContainerID, engine.StreamOptions{
		Cmd: opts.Cmd, Env: opts.Env, WorkDir: opts.WorkDir, User: opts.User, Stderr: stderr,
	})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	if err := acp.Bridge(ctx, opts.Policy, opts.Stdin, st, st, opts.Stdout); err != nil {
		// The server's output may still be being read (and its stderr
		// written): close the stream and leave the held-back stderr alone.
		return 0, err
	}
	// The server's output has ended: no more stderr arrives.
	flushStderr()
	return st.Wait(ctx)
}

// errBridgeStopped ends a write of server output after the bridge stopped.
var errBridgeStopped = errors.New("the protocol bridge stopped")

func (o Options) validate() error {
	var msg string
	switch {
	case o.ContainerID == "":
		msg = "no container given"
	case len(o.Cmd) == 0 || o.Cmd[0] == "":
		msg = "no server command given; set agent.command for a custom agent"
	case o.Stdin == nil || o.Stdout == nil:
		msg = "hosting needs both the client's input and output streams"
	default:
		return nil
	}
	return &errdefs.ContainerError{Op: "host", Container: o.ContainerID, Reason: errdefs.ErrInvalidValue, Msg: msg}
}
