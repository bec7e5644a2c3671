package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/github"
)

// forEachContainer runs fn on every reference, prints the name of each
// container it succeeded on, and goes on after a failure; the failures are
// returned joined.
func forEachContainer(ctx context.Context, f *factory, refs []string, fn func(context.Context, *engine.Conn, string) (podbot.Container, error)) error {
	conn, err := f.engine(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, ref := range refs {
		c, err := fn(ctx, conn, ref)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintln(f.ios.Out, c.Name)
	}
	return errors.Join(errs...)
}

// stopOptions are podbot stop's flags and arguments.
type stopOptions struct {
	timeout int
	any     bool
	refs    []string
}

func newStopCmd(f *factory, runF func(context.Context, *stopOptions) error) *cobra.Command {
	opts := &stopOptions{}
	cmd := &cobra.Command{
		Use:                   "stop [-t SECONDS] CONTAINER...",
		DisableFlagsInUseLine: true,
		Short:                 "Stop podbot containers",
		Long: `Stop containers: SIGTERM, then SIGKILL after the timeout. A container is
named by its name, its id or a unique id prefix; containers podbot did not
create are refused unless --any is given. Stopping a stopped container
succeeds. Each stopped container's name is printed.`,
		Example: `  podbot stop podbot-sandbox-1a2b3c4d5e6f
  podbot stop -t 1 $(podbot ps --json | jq -r '.[].name')`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.timeout < 0 {
				return &usageError{msg: fmt.Sprintf("-t %d: expected 0 or more seconds", opts.timeout)}
			}
			opts.refs = args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			if onKube, err := f.onKubernetes(); err != nil || onKube {
				if err != nil {
					return err
				}
				return &usageError{msg: "podbot stop: a Pod cannot be stopped and started again on the kubernetes backend; delete it with podbot rm -f"}
			}
			timeout := time.Duration(opts.timeout) * time.Second
			if timeout == 0 {
				timeout = -1 // podbot.Stop: negative means no grace period
			}
			return forEachContainer(cmd.Context(), f, opts.refs, func(ctx context.Context, conn *engine.Conn, ref string) (podbot.Container, error) {
				return podbot.Stop(ctx, conn, ref, podbot.StopOptions{Timeout: timeout, Any: opts.any})
			})
		},
	}
	fl := cmd.Flags()
	fl.IntVarP(&opts.timeout, "time", "t", int(podbot.DefaultStopTimeout/time.Second), "seconds to wait after SIGTERM before SIGKILL")
	fl.BoolVar(&opts.any, "any", false, "allow containers podbot did not create")
	return cmd
}

// startOptions are podbot start's flags and arguments.
type startOptions struct {
	any  bool
	refs []string
}

func newStartCmd(f *factory, runF func(context.Context, *startOptions) error) *cobra.Command {
	opts := &startOptions{}
	cmd := &cobra.Command{
		Use:                   "start CONTAINER...",
		DisableFlagsInUseLine: true,
		Short:                 "Start stopped podbot containers again",
		Long: `Start stopped containers again, such as the one podbot run keeps (stopped)
after its agent exits. The container's init process runs again; the agent
does not: run it, or anything else, with podbot exec. A container is named
by its name, its id or a unique id prefix; containers podbot did not create
are refused unless --any is given. Starting a running container succeeds.
Each started container's name is printed.

A container launched with a GitHub token lost its token file when it
stopped. When a GitHub App is configured, a fresh token is written before
the container starts; it is not refreshed afterwards, so keep it fresh with
podbot token-daemon (--container NAME or --all). Without a GitHub App the
container starts with an empty token directory and git cannot authenticate.

The allowlisted host variables (agent.env_allowlist, agent.env_required)
are never stored in the container, so a started container does not have
them: podbot exec --agent-env passes them to one command.`,
		Example: `  podbot start podbot-claude-1a2b3c4d5e6f
  podbot start 1a2b3c && podbot exec --agent-env 1a2b3c -- claude --continue`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.refs = args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return startRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.any, "any", false, "allow containers podbot did not create")
	return cmd
}

func startRun(ctx context.Context, f *factory, opts *startOptions) error {
	lib := podbot.StartOptions{Any: opts.any, RuntimeDir: f.getenv("XDG_RUNTIME_DIR"), Logger: f.logger}
	// The GitHub App is only needed for a container with a token mount; a
	// configuration that does not load or has no App still starts others.
	if loaded, err := f.config(nil); err == nil && loaded.Config.GitHub.Configured() {
		app, err := github.NewApp(podbot.GitHubAppConfig(loaded.Config.GitHub))
		if err != nil {
			return err
		}
		lib.TokenSource = app
	}
	return forEachContainer(ctx, f, opts.refs, func(ctx context.Context, conn *engine.Conn, ref string) (podbot.Container, error) {
		res, err := podbot.Start(ctx, conn, ref, lib)
		if err != nil {
			return res.Container, err
		}
		switch {
		case res.WasRunning:
			f.logger.Info("container already running", "container", res.Container.Name)
		case res.TokenWritten:
			f.logger.Info("fresh GitHub token written; it is not refreshed unless podbot token-daemon runs",
				"container", res.Container.Name, "refresh", "podbot token-daemon --container "+res.Container.Name)
		case res.TokenMount:
			f.logger.Warn("no GitHub App configured: the container starts without a GitHub token, so git cannot authenticate",
				"container", res.Container.Name)
		}
		return res.Container, nil
	})
}

// rmOptions are podbot rm's flags and arguments.
type rmOptions struct {
	force, any bool
	refs       []string
}

func newRmCmd(f *factory, runF func(context.Context, *rmOptions) error) *cobra.Command {
	opts := &rmOptions{}
	cmd := &cobra.Command{
		Use:                   "rm [-f] CONTAINER...",
		DisableFlagsInUseLine: true,
		Short:                 "Remove podbot containers",
		Long: `Remove containers and their anonymous volumes. A running container needs
-f, which kills it first. Containers podbot did not create are refused
unless --any is given. Each removed container's name is printed.

A sandbox made from a local repository (--repo PATH) whose branch has
commits the host never fetched, or whose copy has uncommitted changes, is
refused without -f, which discards that work: take it first with podbot
fetch or podbot apply.`,
		Example: `  podbot rm podbot-sandbox-1a2b3c4d5e6f
  podbot rm -f 1a2b3c`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.refs = args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			if onKube, err := f.onKubernetes(); err != nil || onKube {
				if err != nil {
					return err
				}
				return rmOnKubernetes(cmd.Context(), f, opts)
			}
			return forEachContainer(cmd.Context(), f, opts.refs, func(ctx context.Context, conn *engine.Conn, ref string) (podbot.Container, error) {
				return podbot.Remove(ctx, conn, ref, podbot.RemoveOptions{Force: opts.force, Any: opts.any, Environ: f.environ, RuntimeDir: f.getenv("XDG_RUNTIME_DIR")})
			})
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&opts.force, "force", "f", false, "remove a running container (kills it), or one holding unfetched work")
	fl.BoolVar(&opts.any, "any", false, "allow containers podbot did not create")
	return cmd
}

// logsOptions are podbot logs's flags and argument.
type logsOptions struct {
	follow, any bool
	tail        int
	ref         string
}

func newLogsCmd(f *factory, runF func(context.Context, *logsOptions) error) *cobra.Command {
	opts := &logsOptions{}
	cmd := &cobra.Command{
		Use:                   "logs [-f] [--tail N] CONTAINER",
		DisableFlagsInUseLine: true,
		Short:                 "Show a container's output",
		Long: `Show the output of a container's main process: its stdout on stdout and its
stderr on stderr. -f keeps streaming until the container stops or Ctrl-C.`,
		Example: `  podbot logs podbot-sandbox-1a2b3c4d5e6f
  podbot logs -f --tail 20 1a2b3c`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.tail < 0 {
				return &usageError{msg: fmt.Sprintf("--tail %d: expected 0 (all) or more lines", opts.tail)}
			}
			opts.ref = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			if onKube, err := f.onKubernetes(); err != nil || onKube {
				if err != nil {
					return err
				}
				return logsOnKubernetes(cmd.Context(), f, opts)
			}
			conn, err := f.engine(cmd.Context())
			if err != nil {
				return err
			}
			return podbot.Logs(cmd.Context(), conn, opts.ref,
				podbot.LogsOptions{Follow: opts.follow, Tail: opts.tail, Any: opts.any}, f.ios.Out, f.ios.ErrOut)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&opts.follow, "follow", "f", false, "keep streaming new output")
	fl.IntVar(&opts.tail, "tail", 0, "show only the last `N` lines (0: all)")
	fl.BoolVar(&opts.any, "any", false, "allow containers podbot did not create")
	return cmd
}

// pruneOptions are podbot prune's flags.
type pruneOptions struct {
	dryRun bool
	json   bool
}

func newPruneCmd(f *factory, runF func(context.Context, *pruneOptions) error) *cobra.Command {
	opts := &pruneOptions{}
	cmd := &cobra.Command{
		Use:                   "prune [--dry-run] [--json]",
		DisableFlagsInUseLine: true,
		Short:                 "Remove stopped podbot containers and dangling podbot images",
		Long: `Remove podbot's stopped containers and the dangling (untagged) images that
podbot image build left behind, with the egress proxies and internal
networks of allowlist sandboxes, and those whose sandbox is gone. Running
containers, and containers and images podbot did not create, are never
touched. --dry-run only lists. --json prints what was removed (or would
be) as one JSON object for scripts.

On the kubernetes backend it removes, in the namespace, podbot's sandbox
Pods that ended, cannot start, or are pool members left half-made (with
their NetworkPolicy, Secret and egress proxy), and the NetworkPolicies,
Secrets and egress proxies whose sandbox Pod is gone. Running sandboxes and
ready pool members are never touched.`,
		Example: `  podbot prune --dry-run
  podbot prune
  podbot prune --dry-run --json | jq .containers`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			if onKube, err := f.onKubernetes(); err != nil || onKube {
				if err != nil {
					return err
				}
				return pruneOnKubernetes(cmd.Context(), f, opts)
			}
			conn, err := f.engine(cmd.Context())
			if err != nil {
				return err
			}
			popts := podbot.PruneOptions{DryRun: opts.dryRun, RuntimeDir: f.getenv("XDG_RUNTIME_DIR")}
			if loaded, err := f.config(nil); err == nil {
				popts.ToolsWorkspaceRoot, _ = f.toolsWorkspaceRoot(loaded.Config.Tools.WorkspaceRoot)
			}
			res, err := podbot.Prune(cmd.Context(), conn, popts)
			if perr := printPrune(f, opts, res); err == nil {
				err = perr
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&opts.dryRun, "dry-run", false, "list what would be removed; remove nothing")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the result as one JSON object")
	return cmd
}

// printPrune prints what prune removed (or would remove): with --json one
// JSON object on stdout, else one line each on stdout and a summary on
// stderr.
func printPrune(f *factory, opts *pruneOptions, res podbot.PruneResult) error {
	if opts.json {
		return writeJSON(f.ios.Out, res)
	}
	verb := "removed"
	if res.DryRun {
		verb = "would remove"
	}
	var total int64
	for _, c := range res.Containers {
		fmt.Fprintf(f.ios.Out, "%s container %s (%s)\n", verb, c.Name, shortID(c.ID))
	}
	for _, im := range res.Images {
		total += im.Size
		fmt.Fprintf(f.ios.Out, "%s image %s (%s)\n", verb, shortID(im.ID), humanBytes(im.Size))
	}
	for _, name := range res.Egress {
		fmt.Fprintf(f.ios.Out, "%s egress proxy and network of %s (the sandbox is gone)\n", verb, name)
	}
	for _, o := range res.Orphans {
		fmt.Fprintf(f.ios.Out, "%s %s %s (its sandbox is gone)\n", verb, o.Kind, o.Name)
	}
	for _, d := range res.PoolDirs {
		fmt.Fprintf(f.ios.Out, "%s pool member directory %s (the member is gone)\n", verb, d)
	}
	for _, name := range res.TokenDirs {
		fmt.Fprintf(f.ios.Out, "%s GitHub token directory of pool member %s (the member is gone)\n", verb, name)
	}
	for _, name := range res.EgressDirs {
		fmt.Fprintf(f.ios.Out, "%s egress directory of %s (the sandbox and its proxy are gone)\n", verb, name)
	}
	if len(res.Containers)+len(res.Images)+len(res.Egress)+len(res.EgressDirs)+len(res.Orphans)+len(res.PoolDirs)+len(res.TokenDirs) == 0 {
		fmt.Fprintln(f.ios.ErrOut, "nothing to prune")
	} else {
		fmt.Fprintf(f.ios.ErrOut, "%s: containers %d, images %d (%s)\n", verb, len(res.Containers), len(res.Images), humanBytes(total))
	}
	return nil
}
