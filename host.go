package podbot

import (
	"context"
	"io"
	"log/slog"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/hostflow"
	"github.com/podbot/podbot/launchplan"
)

// HostOptions are the inputs of Host.
type HostOptions struct {
	// Launch configures the sandbox; its Intent is set to hosting.
	// Launch.Config.Agent.Mode picks the protocol (acp or codex_app_server).
	Launch LaunchOptions
	// Stdin and Stdout are the client's stream (an IDE speaking to podbot's
	// stdio). Stdout receives the agent's protocol bytes and nothing else.
	Stdin  io.Reader
	Stdout io.Writer
	// Stderr, when set, receives the agent's stderr unchanged; nil logs it
	// line by line to Launch.Logger.
	Stderr io.Writer
}

// Host launches a sandbox for a protocol-hosting agent, starts its server
// command without a TTY and bridges Stdin and Stdout to it through the ACP
// or Codex app-server policy (see package acp), until the agent exits. It
// returns the agent's exit status. The container is removed when Host
// returns, whatever the outcome, on a context detached from ctx, so a
// cancelled ctx (SIGINT, SIGTERM) stops the agent and still cleans up.
// The one exception is a local repository workspace (local_clone) after a
// normal end (the agent exited, no error, no cancellation): its copy holds
// the session's work, so the sandbox is kept as podbot run without --rm
// keeps it, for podbot diff, log, fetch and apply, until podbot rm.
//
// Nothing is ever written to Stdout but the agent's frames (and, under the
// ACP policy, the answers the policy gives in the agent's place): launch
// progress and diagnostics go to Launch.Progress and Launch.Logger.
func Host(ctx context.Context, conn *engine.Conn, opts HostOptions) (int, error) {
	return host(ctx, engineBackend{conn}, conn, opts)
}

// host is Host on backend be (conn is the engine behind it, or nil).
func host(ctx context.Context, be launchBackend, conn *engine.Conn, opts HostOptions) (code int, err error) {
	opts.Launch.Intent = launchplan.IntentHosting
	logger := opts.Launch.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := opts.Launch.Config.ValidateFor("host"); err != nil {
		return 0, err
	}
	policy, err := hostflow.PolicyFor(opts.Launch.Config, logger)
	if err != nil {
		return 0, err
	}
	if opts.Stdin == nil || opts.Stdout == nil {
		return 0, &errdefs.ContainerError{Op: "host", Reason: errdefs.ErrInvalidValue,
			Msg: "hosting needs both the client's input and output streams"}
	}
	sb, err := launchOn(ctx, be, conn, opts.Launch)
	if err != nil {
		return 0, err
	}
	// A local repository's copy holds the session's work until it is
	// reviewed and fetched: after a normal end the sandbox is kept, as
	// podbot run without --rm keeps it (stopped on the engine; on a
	// cluster the Pod runs on, without its token).
	keep := sb.Plan.Workspace == launchplan.WorkspaceLocalClone
	defer func() {
		cctx, cancel := engine.CleanupContext(ctx)
		defer cancel()
		remove := !keep || err != nil || ctx.Err() != nil
		if !remove {
			if serr := sb.Stop(cctx, keptStopTimeout); serr != nil {
				logger.Warn("stopping the kept sandbox failed", "container", sb.Name, "error", serr)
			}
			logger.Info("kept the sandbox: its local repository copy holds the session's work",
				"container", sb.Name, "review", "podbot diff "+sb.Name, "fetch", "podbot fetch "+sb.Name, "remove", "podbot rm "+sb.Name)
		}
		if cerr := sb.Close(cctx, remove); cerr != nil {
			logger.Warn("removing the hosting sandbox failed", "container", sb.Name, "error", cerr)
		}
	}()
	exec, ok := sb.Plan.AgentExec()
	if !ok {
		return 0, &errdefs.ConfigError{Key: "agent.kind", Reason: errdefs.ErrMissingRequired,
			Msg: "the launch plan has no agent command; set agent.kind (and agent.command for custom)"}
	}
	logger.Info("hosting agent", "container", sb.Name, "mode", policy.Mode.String(), "command", exec.Cmd)
	return hostflow.Serve(ctx, be, hostflow.Options{
		ContainerID: sb.ID,
		Cmd:         exec.Cmd,
		Env:         exec.Env,
		WorkDir:     exec.WorkingDir,
		User:        exec.User,
		Policy:      policy,
		Stdin:       opts.Stdin,
		Stdout:      opts.Stdout,
		Stderr:      opts.Stderr,
		Logger:      logger,
		Redactor:    opts.Launch.Redactor,
	})
}
