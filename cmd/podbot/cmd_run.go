package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// runOptions are podbot run's flags and arguments.
type runOptions struct {
	repo, branch string
	workspace    string
	agent, mode  string
	name         string
	remove       bool
	extraArgs    []string
	egress       egressFlags
	local        localCloneFlags
	pool         poolFlags
}

func newRunCmd(f *factory, runF func(context.Context, *runOptions) error) *cobra.Command {
	opts := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run [--repo OWNER/NAME [--branch B] | --workspace PATH] [--agent KIND] [--rm] [-- AGENT ARGS...]",
		Short: "Run an agent in a hardened sandbox, attached to this terminal",
		Long: `Launch a hardened sandbox and run an agent in it, attached to this terminal.

Each step is reported on stderr: plan, image, github token, create,
credentials, git identity, workspace (a clone of --repo at --branch, or the
host directory --workspace, which must lie under workspace.allowed_roots),
then the agent in its permissive mode (claude --dangerously-skip-permissions,
codex --dangerously-bypass-approvals-and-sandbox, or agent.command with
agent.args); arguments after -- are appended to its command line.

The agent gets a terminal when podbot's stdin and stdout both are terminals;
the local terminal is then in raw mode (Ctrl-C goes to the agent) and window
resizes are passed on. The agent's exit status is podbot's. The container
is stopped and kept afterwards (see podbot ps, podbot start, podbot rm)
unless --rm removes it.

Allowlisted host variables (agent.env_allowlist, agent.env_required) reach
the agent's process only: they are never written into the container's
configuration, so the engine's inspect does not show them. A GitHub token
file is removed when the container stops.
A failed step, or an interrupt (SIGINT, SIGTERM) at any time, removes the
container and its token directory and names the step.

--pool NAME claims a ready sandbox from agent pool NAME (see podbot pool)
and applies the credentials, git identity and --repo clone to it; an empty
pool launches cold from the pool's template (--wait waits for a member
first). What a sandbox made ahead cannot take is refused: --workspace, a
local --repo PATH, --allow-host, [[secrets]], a GitHub App token, and a
network.mode other than the pool's.

On the kubernetes backend (--backend kubernetes) the sandbox is a Pod: the
credential files and the allowlisted variables go in through a Secret of its
own, mounted read-only (never the Pod spec), and without --rm the Pod keeps
running after the agent exits (podbot rm -f deletes it).

` + egressHelp,
		Example: `  podbot run --repo acme/widgets --branch main --agent claude
  podbot run --workspace ~/src/widgets --agent codex --rm
  podbot run --repo . --dirty --agent claude      # a private copy on branch podbot/<name>
  podbot run --workspace . --agent custom -- --verbose
  podbot run --workspace . --allow-host api.example.com --allow-host '*.cdn.example.com:8443'
  podbot run --workspace . --network none
  podbot run --pool agents --network none --repo acme/widgets --agent claude   # a warm sandbox`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parseArgs(args, cmd.ArgsLenAtDash()); err != nil {
				return err
			}
			if cmd.Flags().Changed("branch") && isLocalRepo(opts.repo) {
				return &usageError{msg: "--branch goes with --repo OWNER/NAME; a local --repo PATH starts at its HEAD (or --base REF)"}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runRun(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.repo, "repo", "", "GitHub repository `OWNER/NAME` to clone, or a local repository PATH (/..., ./..., ~/...) to copy in on branch podbot/<name>")
	fl.StringVar(&opts.branch, "branch", "main", "`BRANCH` of --repo to check out")
	fl.StringVar(&opts.workspace, "workspace", "", "host directory `PATH` to mount as the workspace (under workspace.allowed_roots)")
	fl.StringVar(&opts.agent, "agent", "", "agent `KIND`: claude, codex or custom (default: agent.kind)")
	fl.StringVar(&opts.mode, "agent-mode", "", "agent `MODE`; podbot run takes only podbot (default: agent.mode)")
	fl.StringVar(&opts.name, "name", "", "container `NAME` (default podbot-<kind>-<id>)")
	fl.BoolVar(&opts.remove, "rm", false, "remove the container when the agent exits")
	opts.egress.register(fl)
	opts.local.register(fl)
	opts.pool.register(fl)
	return cmd
}

// parseArgs takes the agent's extra arguments (everything after --) and
// checks the flag combination. dash is cobra's ArgsLenAtDash.
func (o *runOptions) parseArgs(args []string, dash int) error {
	switch {
	case len(args) > 0 && dash != 0:
		return &usageError{msg: fmt.Sprintf("unexpected argument %q: put the agent's arguments after --", args[0])}
	case o.repo != "" && o.workspace != "":
		return &usageError{msg: "--repo and --workspace both select the workspace: pick one"}
	case o.branch == "":
		return &usageError{msg: "--branch must not be empty"}
	}
	if err := o.egress.check(); err != nil {
		return err
	}
	if err := o.pool.check(); err != nil {
		return err
	}
	ws, err := absWorkspace(o.workspace)
	if err != nil {
		return err
	}
	o.workspace = ws
	if len(args) > 0 {
		o.extraArgs = args
	}
	return nil
}

// configOverrides maps the flags that override configuration keys.
func (o *runOptions) configOverrides() map[string]string {
	m := map[string]string{}
	if o.agent != "" {
		m["agent.kind"] = o.agent
	}
	if o.mode != "" {
		m["agent.mode"] = o.mode
	}
	o.egress.overrides(m)
	workspaceOverrides(m, o.workspace, o.repo)
	return m
}

func runRun(ctx context.Context, f *factory, opts *runOptions) error {
	loaded, err := f.config(opts.configOverrides())
	if err != nil {
		return err
	}
	cfg := loaded.Config
	if err := cfg.ValidateFor("run"); err != nil {
		return err
	}
	f.warnEgress(loaded)
	onKube := cfg.Sandbox.Backend == config.BackendKubernetes
	var conn *engine.Conn
	if !onKube {
		if conn, err = f.engine(ctx); err != nil {
			return err
		}
	}
	lo, err := f.launchOptions(ctx, loaded, launchplan.IntentInteractive)
	if err != nil {
		return err
	}
	lo.Repo, lo.Name, lo.ExtraArgs, lo.AllowHosts = opts.repo, opts.name, opts.extraArgs, opts.egress.allowHosts
	if lo.LocalClone, err = opts.local.options(opts.repo, f.getenv("HOME")); err != nil {
		return err
	}
	if lo.LocalClone != nil {
		lo.Repo = ""
	} else if opts.repo != "" {
		lo.Branch = opts.branch
	}
	lo.HostPath = opts.workspace
	if err := opts.pool.apply(f, &lo); err != nil {
		return err
	}
	ro := podbot.RunOptions{
		Launch: lo, Remove: opts.remove,
		Stdin: f.ios.In, Stdout: f.ios.Out, Stderr: f.ios.ErrOut,
		InTTY: f.ios.InTTY, OutTTY: f.ios.OutTTY,
	}
	var res podbot.RunResult
	if onKube {
		res, err = runOnKubernetes(ctx, f, ro)
	} else {
		res, err = podbot.Run(ctx, conn, ro)
	}
	if err != nil {
		return err
	}
	if !f.global.quiet {
		if res.Kept && onKube {
			fmt.Fprintf(f.ios.ErrOut, "podbot: agent exited with status %d; Pod %s kept running (a Pod cannot be stopped: podbot exec %s, podbot rm -f %s)\n",
				res.ExitCode, res.Name, res.Name, res.Name)
		} else if res.Kept {
			fmt.Fprintf(f.ios.ErrOut, "podbot: agent exited with status %d; container %s stopped and kept (podbot start %s, podbot rm %s)\n",
				res.ExitCode, res.Name, res.Name, res.Name)
		} else {
			fmt.Fprintf(f.ios.ErrOut, "podbot: agent exited with status %d; container %s removed\n", res.ExitCode, res.Name)
		}
	}
	if res.ExitCode != 0 {
		return &errdefs.ExitError{Code: res.ExitCode}
	}
	return nil
}
