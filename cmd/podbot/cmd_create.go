package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/spf13/cobra"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/workspace"
)

// createOptions are podbot create's flags and arguments.
type createOptions struct {
	name       string
	network    string
	readOnly   bool
	memory     string
	cpus       float64
	pidsLimit  int64
	privileged bool
	command    []string
	egress     egressFlags
	pool       string
	wait       time.Duration
	repo       string
	local      localCloneFlags

	// githubRepo is --repo OWNER/NAME: a GitHub token for that
	// repository (the kubernetes backend only).
	githubRepo string

	// runtimeDir is $XDG_RUNTIME_DIR (an allowlist sandbox's egress files).
	runtimeDir string
	// localClone is the local repository to copy in (localCloneOf), on
	// either backend.
	localClone *podbot.LocalCloneOptions

	// set records which flags were given, so unset ones keep the config's value.
	readOnlySet, privilegedSet bool
}

func newCreateCmd(f *factory, runF func(context.Context, *createOptions) error) *cobra.Command {
	opts := &createOptions{}
	cmd := &cobra.Command{
		Use:                   "create [flags] [-- CMD...]",
		DisableFlagsInUseLine: true,
		Short:                 "Create and start a hardened sandbox to exec into",
		Long: `Create and start a hardened sandbox container from podbot's default plan,
with no agent, and print its name on stdout.

The sandbox keeps all the hardening of an agent container: capabilities
dropped to a short list, no-new-privileges, the engine's seccomp profile,
memory, CPU and process limits, and never the engine socket. Its main
process is "podbot-sidecar init" (bind-mounted read-only from the host, so
the engine must run on this machine), which keeps it alive and reaps
zombies; give a command after -- to run that instead.

Flags override the [sandbox] and [network] sections of the configuration;
the global --image flag picks the image.

` + egressHelp + `
--network also takes bridge or an engine network's name, as sandbox.network
does; such a network is outside podbot's egress control, so it needs
network.mode = "open".

With sandbox.backend = "kubernetes" (--backend kubernetes) the sandbox is a
hardened Pod in the [kubernetes] namespace with a NetworkPolicy of its own,
created through the API server; create waits until it runs and deletes it
again on any failure or Ctrl-C. That backend takes --network none or open
(no egress proxy on a cluster yet) and refuses --privileged. There,
--repo OWNER/NAME with a GitHub App configured gives the Pod an installation
token limited to that repository, as podbot run does (git reads it through
podbot-sidecar, for github.clone_base_url's origin only; nothing is cloned);
run podbot token-daemon NAME (or --all) to keep it fresh.`,
		Example: `  name=$(podbot create --network none --read-only --memory 512m)
  podbot exec "$name" -- sh -c 'id; cat /proc/self/status | grep Cap'
  podbot create --name scratch --pids-limit 100 -- sleep 3600
  podbot create --allow-host pypi.org --allow-host files.pythonhosted.org
  podbot create --network open
  podbot create --pool scratch --wait 5s
  podbot create --name fix-1 --repo . --dirty      # then: podbot diff fix-1

  podbot --backend kubernetes create --network none --read-only
  podbot --backend kubernetes create --name fix-2 --network open --repo octo-org/demo`,
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			opts.readOnlySet = fl.Changed("read-only")
			opts.privilegedSet = fl.Changed("privileged")
			if fl.Changed("cpus") && !(opts.cpus > 0) {
				return &usageError{msg: fmt.Sprintf("--cpus %v: expected a positive number of CPUs, e.g. 1.5", opts.cpus)}
			}
			if fl.Changed("pids-limit") && opts.pidsLimit <= 0 {
				return &usageError{msg: fmt.Sprintf("--pids-limit %d: expected a positive number of processes", opts.pidsLimit)}
			}
			if fl.Changed("memory") {
				if _, err := memoryBytes(opts.memory); err != nil {
					return err
				}
			}
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return &usageError{msg: fmt.Sprintf("unexpected argument %q: put the container command after --", args[0])}
			}
			if fl.Changed("network") && opts.network == "" {
				return &usageError{msg: "--network must not be empty: use allowlist, none, open, bridge or a network name"}
			}
			if err := opts.egress.check(); err != nil {
				return err
			}
			if opts.wait < 0 || (opts.wait > 0 && opts.pool == "") {
				return &usageError{msg: "--wait needs --pool and a positive duration such as 5s"}
			}
			opts.command = args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return createRun(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.name, "name", "", "container `NAME` (default podbot-sandbox-<id>)")
	fl.StringVar(&opts.repo, "repo", "", "local repository `PATH` to copy into the sandbox on branch podbot/<name> (see podbot diff); on the kubernetes backend also OWNER/NAME: a GitHub App token for that repository, kept fresh by podbot token-daemon")
	opts.local.register(fl)
	fl.StringVar(&opts.network, "network", "", "egress `MODE` (allowlist, none, open), or bridge or a network name with network.mode = open (default: network.mode and sandbox.network)")
	opts.egress.registerAllowHost(fl)
	fl.BoolVar(&opts.readOnly, "read-only", false, "read-only root filesystem with a writable tmpfs /tmp")
	fl.StringVar(&opts.memory, "memory", "", "memory limit `SIZE`, e.g. 256m or 2g (default: sandbox.memory)")
	fl.Float64Var(&opts.cpus, "cpus", 0, "CPU limit in `CPUS`, e.g. 1.5 (default: sandbox.cpus)")
	fl.Int64Var(&opts.pidsLimit, "pids-limit", 0, "process limit `N` (default: sandbox.pids_limit)")
	fl.BoolVar(&opts.privileged, "privileged", false, "privileged profile (needs an engine that can run privileged containers)")
	fl.StringVar(&opts.pool, "pool", "", "claim a ready sandbox from agent pool `NAME` (see podbot pool); an empty pool creates one cold from the pool's template")
	fl.DurationVar(&opts.wait, "wait", 0, "with --pool: wait up to `DURATION` for a ready member before creating cold")
	return cmd
}

// memoryBytes parses a --memory value.
func memoryBytes(s string) (int64, error) {
	n, err := config.ParseSize(s)
	if err != nil || n <= 0 {
		return 0, &usageError{msg: fmt.Sprintf("--memory %q: expected a positive size such as 256m or 2g", s)}
	}
	return n.Bytes(), nil
}

// networkMode reports whether --network names an egress mode (allowlist,
// none, open) rather than an engine network (bridge or a name).
func (o *createOptions) networkMode() bool {
	switch o.network {
	case config.NetworkAllowlist, config.NetworkNone, config.NetworkOpen:
		return true
	}
	return false
}

// configOverrides maps the flags that override configuration keys: an
// egress mode given to --network sets network.mode.
func (o *createOptions) configOverrides() map[string]string {
	m := map[string]string{}
	if o.networkMode() {
		m["network.mode"] = o.network
	}
	return m
}

// toLibrary turns parsed flags into library options.
func (o *createOptions) toLibrary(cfg config.Config, sidecar string) (podbot.CreateOptions, error) {
	out := podbot.CreateOptions{
		Config:      cfg,
		Name:        o.name,
		PidsLimit:   o.pidsLimit,
		Command:     o.command,
		SidecarPath: sidecar,
		AllowHosts:  o.egress.allowHosts,
	}
	// An engine network, or none, is this sandbox's sandbox.network.
	if !o.networkMode() || o.network == config.NetworkNone {
		out.Network = o.network
	}
	if out.Network != "" && out.Network != config.NetworkNone && cfg.Network.Mode != "" && cfg.Network.Mode != config.NetworkOpen {
		return out, &usageError{msg: fmt.Sprintf("--network %s: that network is outside podbot's egress control, but network.mode is %q; use --network open for the engine's default network without egress control, or set network.mode = \"open\" to use a named network",
			o.network, cfg.Network.Mode)}
	}
	if o.runtimeDir != "" {
		out.RuntimeDir = o.runtimeDir
	}
	if o.memory != "" {
		n, err := memoryBytes(o.memory)
		if err != nil {
			return out, err
		}
		out.MemoryBytes = n
	}
	if o.cpus > 0 {
		out.NanoCPUs = int64(math.Round(o.cpus * 1e9))
	}
	if o.readOnlySet {
		ro := o.readOnly
		out.ReadOnlyRootfs = &ro
	}
	if o.privilegedSet {
		p := o.privileged
		out.Privileged = &p
	}
	return out, nil
}

// localCloneOf is the local repository create copies in: --repo PATH,
// or workspace.repo_path when workspace.source is local_clone (nil for
// none).
func (opts *createOptions) localCloneOf(f *factory, cfg config.Config) (*podbot.LocalCloneOptions, error) {
	if opts.repo != "" {
		if !isLocalRepo(opts.repo) {
			return nil, &usageError{msg: fmt.Sprintf("--repo %q: give a local repository's path (/..., ./..., ~/...) or, on the kubernetes backend, a GitHub repository OWNER/NAME", opts.repo)}
		}
		return opts.local.options(opts.repo, f.getenv("HOME"))
	}
	if w := cfg.Workspace; w.Source == config.SourceLocalClone && w.RepoPath != "" {
		return &podbot.LocalCloneOptions{Path: w.RepoPath, Base: opts.local.base, Dirty: opts.local.dirty, Depth: opts.local.depth}, nil
	}
	if opts.local.base != "" || opts.local.dirty || opts.local.depth != 0 {
		return nil, &usageError{msg: "--base, --dirty and --depth go with --repo PATH"}
	}
	return nil, nil
}

func createRun(ctx context.Context, f *factory, opts *createOptions) error {
	loaded, err := f.config(opts.configOverrides())
	if err != nil {
		return err
	}
	f.warnEgress(loaded)
	if opts.repo != "" && !isLocalRepo(opts.repo) {
		if _, err := workspace.ParseRepo(opts.repo); err == nil {
			opts.githubRepo, opts.repo = opts.repo, ""
		}
	}
	if opts.localClone, err = opts.localCloneOf(f, loaded.Config); err != nil {
		return err
	}
	if loaded.Config.Sandbox.Backend == config.BackendKubernetes {
		return createOnKubernetes(ctx, f, opts, loaded.Config)
	}
	if opts.githubRepo != "" {
		return &usageError{msg: fmt.Sprintf("--repo %s: podbot create gives a sandbox a GitHub token on the kubernetes backend only (--backend kubernetes); on the engine use podbot run --repo OWNER/NAME, or podbot create --repo PATH to copy a local repository", opts.githubRepo)}
	}
	// The sidecar is the sandbox's init when no command is given, and the
	// egress proxy of an allowlist sandbox in any case.
	sidecar, searched := f.findSidecar()
	if sidecar == "" && len(opts.command) == 0 {
		f.logger.Warn("podbot-sidecar not found; the sandbox runs `sleep infinity`, which does not reap zombies",
			"searched", searched)
	}
	opts.runtimeDir = f.getenv("XDG_RUNTIME_DIR")
	lib, err := opts.toLibrary(loaded.Config, sidecar)
	if err != nil {
		return err
	}
	lib.Environ, lib.Redactor, lib.GitHubRepo = f.environ, f.redactor, opts.githubRepo
	if opts.pool != "" {
		spec, err := f.poolSpec(opts.pool)
		if err != nil {
			return err
		}
		lib.Pool, lib.PoolWait = &spec, opts.wait
	}
	lib.LocalClone = opts.localClone
	conn, err := f.engine(ctx)
	if err != nil {
		return err
	}
	res, err := podbot.Create(ctx, conn, lib)
	if err != nil {
		return err
	}
	if res.Claim != nil {
		logClaim(f, *res.Claim)
	}
	_, err = fmt.Fprintln(f.ios.Out, res.Name)
	return err
}

// logClaim reports on stderr how a claim from a pool went.
func logClaim(f *factory, c podbot.ClaimReport) {
	attrs := []any{"pool", c.Pool, "outcome", c.Outcome, "member", c.Member, "name", c.Name, "took", c.Duration.Round(time.Microsecond)}
	if c.Fallback != "" {
		attrs = append(attrs, "fallback", c.Fallback)
	}
	f.logger.Info("pool claim", attrs...)
}
