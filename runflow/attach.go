package runflow

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
)

// Execer runs a command in a running container and returns its exit
// status. *engine.Conn satisfies it.
type Execer interface {
	Exec(ctx context.Context, containerID string, opts engine.ExecOptions) (int, error)
}

// Agent is the command attached to the terminal.
type Agent struct {
	// Cmd is the agent's argv; it must not be empty.
	Cmd []string
	// Env are extra KEY=VALUE entries for the agent.
	Env []string
	// User and WorkDir override the container's defaults when set.
	User, WorkDir string
	// TTY asks for a pseudo-terminal. One is allocated only when the local
	// stdin and stdout are both terminals.
	TTY bool
	// Stdin attaches the local stdin to the agent.
	Stdin bool
}

// Terminal is the local side of the attachment.
type Terminal struct {
	// In is copied to the agent when Agent.Stdin is set.
	In io.Reader
	// Out receives the agent's stdout (everything, with a TTY); Err its stderr.
	Out, Err io.Writer
	// InTTY and OutTTY say whether In and Out are terminals.
	InTTY, OutTTY bool
}

// Options are the inputs of Attach.
type Options struct {
	// ContainerID names the running container the agent runs in.
	ContainerID string
	// Agent is the command to run.
	Agent Agent
	// Terminal is the local side.
	Terminal Terminal
	// Logger receives failed resizes (never fatal); nil discards them.
	Logger *slog.Logger
}

// Result is what Attach observed.
type Result struct {
	// ExitCode is the agent's exit status, 0..255 (128+signal when killed).
	ExitCode int
	// TTY says whether the agent had a pseudo-terminal.
	TTY bool
	// Started is when the exec was requested; FirstOutput when the agent's
	// first output byte arrived (zero when it printed nothing).
	Started, FirstOutput time.Time
}

// UseTTY reports whether an agent that asks for a terminal gets one: only
// when both the local stdin and stdout are terminals.
func UseTTY(want, inTTY, outTTY bool) bool { return want && inTTY && outTTY }

// Attach runs the agent in the container with the local terminal attached
// and returns its exit status. With a TTY the local terminal is in raw mode
// until Attach returns (restored exactly once, also on error or
// cancellation) and window size changes are forwarded; a failed resize is
// logged, never fatal. Without one, stdout and stderr stay separate. When
// ctx is cancelled the stream is closed and the cancellation is returned.
func Attach(ctx context.Context, x Execer, opts Options) (Result, error) {
	a, t := opts.Agent, opts.Terminal
	if len(a.Cmd) == 0 || a.Cmd[0] == "" {
		return Result{}, &errdefs.ContainerError{Op: "attach", Container: opts.ContainerID, Reason: errdefs.ErrInvalidValue,
			Msg: "the launch plan has no agent command", Hint: "set agent.kind (claude, codex or custom with agent.command)"}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	res := Result{TTY: UseTTY(a.TTY, t.InTTY, t.OutTTY)}
	first := &firstOutput{}
	eo := engine.ExecOptions{
		Cmd: slices.Clone(a.Cmd), Env: slices.Clone(a.Env), User: a.User, WorkDir: a.WorkDir,
		TTY:    res.TTY,
		Stdout: first.wrap(t.Out),
		Stderr: first.wrap(t.Err),
		OnResizeError: func(err error) {
			logger.Warn("could not resize the agent's terminal", "container", opts.ContainerID, "error", err)
		},
	}
	if a.Stdin && t.In != nil {
		eo.Stdin = t.In
	}
	if res.TTY {
		restore, err := MakeRaw(t.In)
		if err != nil {
			return res, err
		}
		defer restore()
		if sz, ok := Size(t.Out); ok {
			eo.InitialSize = sz
		}
		sizes, stop := WatchSize(ctx, t.Out)
		defer stop()
		eo.Resize = sizes
	}
	res.Started = time.Now()
	code, err := x.Exec(ctx, opts.ContainerID, eo)
	res.FirstOutput = first.at()
	if err != nil {
		return res, err
	}
	res.ExitCode = code
	return res, nil
}

// firstOutput records when the first byte reached any wrapped writer.
type firstOutput struct {
	mu sync.Mutex
	t  time.Time
}

func (f *firstOutput) wrap(w io.Writer) io.Writer {
	if w == nil {
		w = io.Discard
	}
	return &firstWriter{w: w, f: f}
}

func (f *firstOutput) mark() {
	f.mu.Lock()
	if f.t.IsZero() {
		f.t = time.Now()
	}
	f.mu.Unlock()
}

func (f *firstOutput) at() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

type firstWriter struct {
	w io.Writer
	f *firstOutput
}

func (fw *firstWriter) Write(p []byte) (int, error) {
	if len(p) > 0 {
		fw.f.mark()
	}
	return fw.w.Write(p)
}
