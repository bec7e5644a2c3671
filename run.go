package podbot

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/runflow"
)

// keptStopTimeout is the grace a kept container's init gets, once the
// agent has exited, before the engine kills what is left in it.
const keptStopTimeout = 3 * time.Second

// StepAgent is the last step of podbot run: the agent attached to the
// terminal. Progress reports and StepError name it like the launch steps.
const StepAgent = "agent"

// RunOptions are the inputs of Run.
type RunOptions struct {
	// Launch configures the shared launch sequence; Run sets its Intent to
	// interactive.
	Launch LaunchOptions
	// Remove removes the container (and its token directory) after the
	// agent exits. Without it the container is stopped and kept: listed by
	// podbot ps, started again by Start (podbot start), with no token on
	// disk while it is stopped.
	Remove bool
	// Stdin, Stdout and Stderr are the local terminal's streams.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// InTTY and OutTTY say whether Stdin and Stdout are terminals; the agent
	// gets a pseudo-terminal only when both are.
	InTTY, OutTTY bool
}

// RunResult is what Run did.
type RunResult struct {
	// Name and ID identify the container.
	Name, ID string
	// ExitCode is the agent's exit status (0..255).
	ExitCode int
	// Kept says the container is still there, stopped (no Remove, no
	// failure).
	Kept bool
	// TTY says whether the agent had a pseudo-terminal.
	TTY bool
	// Started is when Run began; AgentStarted when the agent's exec was
	// requested; FirstOutput when the agent's first output arrived (zero
	// if it printed nothing).
	Started, AgentStarted, FirstOutput time.Time
}

// Run is podbot run: it launches a sandbox through Launch (plan, image,
// token, create, credentials, git identity, workspace), starts the agent
// in its interactive, permissive mode attached to the local terminal, and
// returns the agent's exit status in RunResult.ExitCode.
//
// A failure at any step, or a cancelled ctx (Ctrl-C) at any time, removes
// the container and the token directory on a detached, bounded context and
// returns a *StepError naming the step. After a normal agent exit the
// container is removed if opts.Remove is set; otherwise it is stopped (so
// nothing the agent left running goes on) and kept, and its token
// directory removed.
//
// The allowlisted host variables (agent.env_allowlist, agent.env_required)
// reach the agent through its exec only: they are not in the container's
// configuration, so the engine's inspect never shows them.
func Run(ctx context.Context, conn *engine.Conn, opts RunOptions) (RunResult, error) {
	return run(ctx, engineBackend{conn}, conn, opts)
}

// run is Run on backend be (conn is the engine behind it, or nil).
func run(ctx context.Context, be launchBackend, conn *engine.Conn, opts RunOptions) (res RunResult, err error) {
	res.Started = time.Now()
	lo := opts.Launch
	lo.Intent = launchplan.IntentInteractive
	progress := lo.Progress
	if progress == nil {
		progress = func(string, string) {}
	}
	if lo.Config.Agent.Kind == "" {
		return res, &StepError{StepPlan, noAgentError()}
	}
	sb, err := launchOn(ctx, be, conn, lo)
	if err != nil {
		return res, err
	}
	res.Name, res.ID = sb.Name, sb.ID
	remove := opts.Remove
	defer func() {
		if err != nil || ctx.Err() != nil {
			remove = true
		}
		cctx, cancel := engine.CleanupContext(ctx)
		defer cancel()
		if !remove {
			if serr := sb.Stop(cctx, keptStopTimeout); serr != nil {
				err = errors.Join(err, &StepError{StepAgent, serr})
			}
		}
		if cerr := sb.Close(cctx, remove); cerr != nil {
			err = errors.Join(err, &StepError{StepAgent, cerr})
		}
		res.Kept = !remove
	}()

	spec, ok := sb.Plan.AgentExec()
	if !ok {
		return res, &StepError{StepAgent, noAgentError()}
	}
	tty := runflow.UseTTY(spec.Tty, opts.InTTY, opts.OutTTY)
	mode := "no terminal"
	if tty {
		mode = "terminal"
	}
	progress(StepAgent, strings.Join(spec.Cmd, " ")+" ("+mode+")")
	if err := ctx.Err(); err != nil {
		return res, &StepError{StepAgent, err}
	}
	ar, err := runflow.Attach(ctx, be, runflow.Options{
		ContainerID: sb.ID,
		Agent: runflow.Agent{Cmd: spec.Cmd, Env: spec.Env, User: spec.User, WorkDir: spec.WorkingDir,
			TTY: spec.Tty, Stdin: spec.AttachStdin},
		Terminal: runflow.Terminal{In: opts.Stdin, Out: opts.Stdout, Err: opts.Stderr,
			InTTY: opts.InTTY, OutTTY: opts.OutTTY},
		Logger: lo.Logger,
	})
	res.TTY, res.AgentStarted, res.FirstOutput = ar.TTY, ar.Started, ar.FirstOutput
	if err != nil {
		return res, &StepError{StepAgent, err}
	}
	res.ExitCode = ar.ExitCode
	return res, nil
}

func noAgentError() error {
	return &errdefs.ConfigError{Key: "agent.kind", Reason: errdefs.ErrMissingRequired,
		Msg: "podbot run needs an agent: set agent.kind to claude, codex or custom (or pass --agent)"}
}
