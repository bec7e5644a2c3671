package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/agentkind"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// hostOptions are podbot host's flags and arguments.
type hostOptions struct {
	agent, agentMode    string
	allowHostDelegation bool
	allowTerminalAuth   bool
	workspace           string
	repo, branch        string
	name                string
	extraArgs           []string
	egress              egressFlags
	local               localCloneFlags
	pool                poolFlags
}

// configOverrides maps the flags the user gave onto configuration keys.
func (o *hostOptions) configOverrides() map[string]string {
	m := map[string]string{}
	if o.agent != "" {
		m["agent.kind"] = o.agent
	}
	if o.agentMode != "" {
		m["agent.mode"] = o.agentMode
	} else if agentkind.IsACPKind(o.agent) {
		// The built-in ACP kinds serve ACP only.
		m["agent.mode"] = config.ModeACP
	}
	if o.allowHostDelegation {
		m["agent.allow_host_delegation"] = "true"
	}
	if o.allowTerminalAuth {
		m["agent.allow_terminal_auth"] = "true"
	}
	o.egress.overrides(m)
	workspaceOverrides(m, o.workspace, o.repo)
	return m
}

func newHostCmd(f *factory, runF func(context.Context, *hostOptions) error) *cobra.Command {
	opts := &hostOptions{}
	cmd := &cobra.Command{
		Use:   "host --agent KIND [--agent-mode acp|codex_app_server] [flags] [-- EXTRA_ARGS...]",
		Short: "Serve a sandboxed agent's protocol (ACP or Codex app-server) on stdio",
		Long: `Host an agent's protocol server inside a hardened sandbox and speak it on
podbot's stdin and stdout, so an IDE (Zed, a JetBrains IDE, any ACP client)
can launch podbot as if it were the agent.

stdout carries the agent's protocol frames and nothing else: launch progress,
warnings, errors and the agent's own stderr go to stderr (see --quiet and
--log-format). When the IDE closes stdin, the agent's stdin is closed and
podbot waits for it to exit; podbot exits with the agent's status. SIGINT or
SIGTERM stops the agent. The container is removed when podbot exits (on the
kubernetes backend: the Pod, its NetworkPolicy and its Secret).

ACP mode (--agent-mode acp) keeps the IDE's host out of the agent's reach:
the initialize request loses clientCapabilities.fs, .terminal, .auth.terminal
and ._meta["terminal-auth"], and the agent's fs/*, terminal/* and mcp/*
requests are answered by podbot with a -32601 error instead of reaching the
IDE. --allow-host-delegation (agent.allow_host_delegation) turns this off and
logs a trust-boundary warning.

The agent's initialize response loses its terminal authentication methods
(authMethods of type "terminal", _meta["terminal-auth"]): the IDE would run
podbot again, on the host, with arguments and environment the sandboxed agent
chose. --allow-terminal-auth (agent.allow_terminal_auth) lets terminal
authentication through and logs a trust-boundary warning.

--pool NAME claims a ready sandbox from agent pool NAME (see podbot pool)
and applies the credentials, git identity and --repo clone to it; an empty
pool launches cold from the pool's template (--wait waits for a member
first). What a sandbox made ahead cannot take is refused: --workspace, a
local --repo PATH, --allow-host, [[secrets]], a GitHub App token, and a
network.mode other than the pool's.

Codex app-server mode (--agent-mode codex_app_server) forwards bytes
unchanged; set agent.codex_block_dynamic_tools to refuse item/tool/call
requests, which would run dynamic tools on the IDE's host.

The agent's command comes from the plan: codex runs "codex app-server
--listen stdio://"; a custom agent runs agent.command with agent.args.
Arguments after -- are appended to it.

The built-in ACP agents need no command and no --agent-mode: opencode
("opencode acp"), droid ("droid-acp"), goose ("goose acp"), claude-acp
("claude-code-acp"), codex-acp ("codex-acp") and gemini ("gemini --acp").
Build them into the agent image with podbot image build --agents. Their
API key variables (README: agents table) are passed when set on the host;
agent.model_endpoint points them at another model API (a self-hosted or
mock provider), and its host:port joins the egress allowlist.

` + egressHelp,
		Example: `  podbot host --agent opencode --workspace ~/src/app
  podbot host --agent gemini --workspace ~/src/app
  podbot host --agent codex --agent-mode codex_app_server --repo acme/app --branch main
  podbot host --agent custom --agent-mode acp --workspace ~/src/app
  podbot -q --log-format json host --agent custom --agent-mode acp -- --verbose
  podbot host --agent custom --agent-mode acp --workspace ~/src/app --allow-host model.example.com:8443`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return &usageError{msg: fmt.Sprintf("unexpected argument %q: put the agent's extra arguments after --", args[0])}
			}
			switch {
			case opts.workspace != "" && opts.repo != "":
				return &usageError{msg: "--workspace and --repo contradict each other: mount a host directory or clone a repository, not both"}
			case opts.branch != "" && isLocalRepo(opts.repo):
				return &usageError{msg: "--branch goes with --repo OWNER/NAME; a local --repo PATH starts at its HEAD (or --base REF)"}
			case opts.branch != "" && opts.repo == "":
				return &usageError{msg: "--branch needs --repo OWNER/NAME"}
			case opts.repo != "" && opts.branch == "" && !isLocalRepo(opts.repo):
				return &usageError{msg: "--repo needs --branch BRANCH"}
			}
			if err := opts.egress.check(); err != nil {
				return err
			}
			if err := opts.pool.check(); err != nil {
				return err
			}
			ws, err := absWorkspace(opts.workspace)
			if err != nil {
				return err
			}
			opts.workspace = ws
			opts.extraArgs = args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return hostRun(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.agent, "agent", "", "agent `KIND`: codex, custom, opencode, droid, goose, claude-acp, codex-acp or gemini (default: agent.kind)")
	fl.StringVar(&opts.agentMode, "agent-mode", "", "protocol `MODE`: acp or codex_app_server (default: agent.mode)")
	fl.BoolVar(&opts.allowHostDelegation, "allow-host-delegation", false, "let the agent use the IDE's files, terminals and MCP servers (crosses the trust boundary)")
	fl.BoolVar(&opts.allowTerminalAuth, "allow-terminal-auth", false, "let the agent's terminal authentication methods reach the IDE, which then relaunches podbot with the agent's arguments and environment (crosses the trust boundary)")
	fl.StringVar(&opts.workspace, "workspace", "", "host `PATH` to mount as the workspace (must be inside workspace.allowed_roots)")
	fl.StringVar(&opts.repo, "repo", "", "GitHub repository `OWNER/NAME` to clone, or a local repository PATH (/..., ./..., ~/...) to copy in on branch podbot/<name>")
	fl.StringVar(&opts.branch, "branch", "", "`BRANCH` to clone (with --repo)")
	fl.StringVar(&opts.name, "name", "", "container `NAME` (default: generated)")
	opts.egress.register(fl)
	opts.local.register(fl)
	opts.pool.register(fl)
	return cmd
}

func hostRun(ctx context.Context, f *factory, opts *hostOptions) error {
	loaded, err := f.config(opts.configOverrides())
	if err != nil {
		return err
	}
	if err := loaded.Config.ValidateFor("host"); err != nil {
		return err
	}
	f.warnEgress(loaded)
	onKube := loaded.Config.Sandbox.Backend == config.BackendKubernetes
	var conn *engine.Conn
	if !onKube {
		if conn, err = f.engine(ctx); err != nil {
			return err
		}
	}
	lo, err := f.launchOptions(ctx, loaded, launchplan.IntentHosting)
	if err != nil {
		return err
	}
	lo.HostPath, lo.Repo, lo.Branch, lo.Name, lo.ExtraArgs = opts.workspace, opts.repo, opts.branch, opts.name, opts.extraArgs
	lo.AllowHosts = opts.egress.allowHosts
	if lo.LocalClone, err = opts.local.options(opts.repo, f.getenv("HOME")); err != nil {
		return err
	}
	if lo.LocalClone != nil {
		lo.Repo, lo.Branch = "", ""
	}
	if err := opts.pool.apply(f, &lo); err != nil {
		return err
	}
	// An IDE that goes away closes the pipe behind stdout. Receiving SIGPIPE
	// turns the next write into an error instead of killing podbot, so the
	// bridge stops and the container is still removed.
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)
	ho := podbot.HostOptions{Launch: lo, Stdin: f.ios.In, Stdout: f.ios.Out}
	var code int
	if onKube {
		code, err = hostOnKubernetes(ctx, f, ho)
	} else {
		code, err = podbot.Host(ctx, conn, ho)
	}
	if err != nil {
		return err
	}
	if code != 0 {
		return &errdefs.ExitError{Code: code}
	}
	return nil
}
