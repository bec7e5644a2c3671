package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/runflow"
)

// execOptions are podbot exec's flags and arguments.
type execOptions struct {
	detach, tty, noTTY, any bool
	agentEnv                bool
	env                     []string
	workdir, user           string
	ref                     string
	command                 []string
}

func newExecCmd(f *factory, runF func(context.Context, *execOptions) error) *cobra.Command {
	opts := &execOptions{}
	cmd := &cobra.Command{
		Use:                   "exec [-d] [-t|-T] [-e K=V] [--agent-env] [-w DIR] [-u USER] CONTAINER -- CMD...",
		DisableFlagsInUseLine: true,
		Short:                 "Run a command in a running podbot container",
		Long: `Run a command in a running container and pass on its exit status as
podbot's own (a command killed by a signal gives 128+signal).

A terminal is allocated when both podbot's stdin and stdout are terminals;
-t forces one, -T refuses one. With a terminal, the local terminal is put in
raw mode (always restored) and window resizes are passed on. Without one,
stdout carries the command's stdout bytes only and stderr its stderr; stdin
is passed through and its end closes the command's stdin. -d passes no
stdin, discards the output and waits for the command to finish.

The command gets none of the host variables the agent was given
(agent.env_allowlist, agent.env_required): podbot never stores them in the
container. --agent-env passes them to this command, read from podbot's own
environment like podbot run does, so their values stay out of argv and out
of the container's configuration; -e entries come after them and win.

The container is named by its name, its id or a unique id prefix;
containers podbot did not create are refused unless --any is given.`,
		Example: `  podbot exec podbot-sandbox-1a2b3c4d5e6f -- bash
  podbot exec -T 1a2b3c -- tar -C /tmp -cf - . > tmp.tar
  podbot exec -d -e MODE=batch -w /tmp 1a2b3c -- sh -c './job > job.log'
  podbot exec --agent-env podbot-claude-1a2b3c4d5e6f -- claude --continue`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parseArgs(args); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return execRun(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.SetInterspersed(false)
	fl.BoolVarP(&opts.detach, "detach", "d", false, "no stdin, output discarded; wait for the command to finish")
	fl.BoolVarP(&opts.tty, "tty", "t", false, "allocate a terminal even when stdin or stdout is not one")
	fl.BoolVarP(&opts.noTTY, "no-tty", "T", false, "never allocate a terminal")
	fl.StringArrayVarP(&opts.env, "env", "e", nil, "set an environment variable `K=V` (repeatable)")
	fl.BoolVar(&opts.agentEnv, "agent-env", false, "pass the agent's allowlisted host variables (agent.env_allowlist, agent.env_required)")
	fl.StringVarP(&opts.workdir, "workdir", "w", "", "working `DIR` in the container")
	fl.StringVarP(&opts.user, "user", "u", "", "`USER` (name, uid or uid:gid) to run as")
	fl.BoolVar(&opts.any, "any", false, "allow containers podbot did not create")
	return cmd
}

// parseArgs splits CONTAINER [--] CMD... and checks the flag combination.
func (o *execOptions) parseArgs(args []string) error {
	o.ref, o.command = args[0], args[1:]
	if len(o.command) > 0 && o.command[0] == "--" {
		o.command = o.command[1:]
	}
	switch {
	case len(o.command) == 0:
		return &usageError{msg: "no command: podbot exec CONTAINER -- CMD..."}
	case o.tty && o.noTTY:
		return &usageError{msg: "-t and -T contradict each other: pick one"}
	case o.detach && o.tty:
		return &usageError{msg: "-d attaches no streams, so -t has no terminal to give: drop one of them"}
	}
	for _, e := range o.env {
		if k, _, ok := splitEnv(e); !ok || k == "" {
			return &usageError{msg: fmt.Sprintf("-e %q: expected KEY=VALUE", e)}
		}
	}
	return nil
}

func splitEnv(e string) (string, string, bool) {
	for i := 0; i < len(e); i++ {
		if e[i] == '=' {
			return e[:i], e[i+1:], true
		}
	}
	return e, "", false
}

// wantTTY decides whether the exec gets a terminal.
func (o *execOptions) wantTTY(inTTY, outTTY bool) bool {
	switch {
	case o.detach || o.noTTY:
		return false
	case o.tty:
		return true
	}
	return inTTY && outTTY
}

func execRun(ctx context.Context, f *factory, opts *execOptions) error {
	onKube, err := f.onKubernetes()
	if err != nil {
		return err
	}
	if onKube {
		return execOnKubernetes(ctx, f, opts)
	}
	conn, err := f.engine(ctx)
	if err != nil {
		return err
	}
	env := opts.env
	if opts.agentEnv {
		if env, err = f.agentEnv(opts.env); err != nil {
			return err
		}
	}
	lib := podbot.ExecOptions{
		Cmd: opts.command, Env: env, WorkingDir: opts.workdir, User: opts.user,
		TTY: opts.wantTTY(f.ios.InTTY, f.ios.OutTTY), Detach: opts.detach, Any: opts.any, Logger: f.logger,
	}
	if !opts.detach {
		lib.Stdin, lib.Stdout, lib.Stderr = f.ios.In, f.ios.Out, f.ios.ErrOut
	}
	if lib.TTY {
		restore, err := runflow.MakeRaw(f.ios.In)
		if err != nil {
			return err
		}
		defer restore()
		lib.InitialSize, _ = runflow.Size(f.ios.Out)
		sizes, stop := runflow.WatchSize(ctx, f.ios.Out)
		defer stop()
		lib.Resize = sizes
	}
	code, err := podbot.Exec(ctx, conn, opts.ref, lib)
	if err != nil {
		return err
	}
	if code != 0 {
		return &errdefs.ExitError{Code: code}
	}
	return nil
}

// agentEnv returns the agent's allowlisted host variables, read from
// podbot's environment, followed by extra. Their values are registered with
// the redactor, so no log line shows them.
func (f *factory) agentEnv(extra []string) ([]string, error) {
	loaded, err := f.config(nil)
	if err != nil {
		return nil, err
	}
	a := loaded.Config.Agent
	env, secrets, err := creds.Passthrough(a.EnvAllowlist, a.EnvRequired, f.environ)
	if err != nil {
		return nil, err
	}
	f.redactor.Add(secrets...)
	return append(env, extra...), nil
}
