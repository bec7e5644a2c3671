package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/pool"
)

// poolCreateOptions are podbot pool create's flags.
type poolCreateOptions struct {
	size      int
	kind      string
	network   string
	memory    string
	cpus      float64
	pidsLimit int64
	readOnly  bool
	noFill    bool

	readOnlySet bool
}

func newPoolCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pool",
		Short: "Keep warm pools of ready sandboxes to claim in milliseconds",
		Long: `A warm pool keeps N sandboxes started, hardened and paused, so that a claim
(podbot create --pool, podbot tools call --pool, or the library's tool-session
and create entry points) takes one in milliseconds instead of creating one.

A member is created exactly as an ordinary sandbox of its kind (tools: a
tool-session container; agent: a podbot create sandbox) from the pool's
template, its sidecar checked, then paused, with no credentials and an empty
workspace. A claim unpauses one member (the engine lets exactly one of any
number of concurrent claimers do that), renames it to the claimer's name and
applies what is per claim (the tool session's workspace). From then on it is
an ordinary sandbox. An empty pool falls back to a cold create (or waits with
--wait) and says so.

podbot pool serve keeps every pool at size, replaces members that stopped,
died or aged past pool.max_age, and backs off when creates keep failing.

With --backend kubernetes a member is a running sandbox Pod labelled
podbot.pool.state=ready, and a claim is one patch of that label to claimed,
conditional on the resourceVersion the claimer listed: the API server lets
exactly one claimer win. A claimed Pod keeps its name. Only agent pools
live on a cluster; a pool belongs to the backend it was created on.`,
	}
	cmd.AddCommand(newPoolCreateCmd(f), newPoolLsCmd(f), newPoolResizeCmd(f), newPoolRmCmd(f), newPoolServeCmd(f))
	return cmd
}

// poolStore opens the pool state directory of the configuration.
func (f *factory) poolStore() (*pool.Store, error) {
	loaded, err := f.config(nil)
	if err != nil {
		return nil, err
	}
	dir := loaded.Config.Pool.StateDir
	if dir == "" {
		switch {
		case filepath.IsAbs(f.getenv("XDG_STATE_HOME")):
			dir = filepath.Join(f.getenv("XDG_STATE_HOME"), "podbot", "pools")
		case filepath.IsAbs(f.getenv("HOME")):
			dir = filepath.Join(f.getenv("HOME"), ".local", "state", "podbot", "pools")
		default:
			return nil, &errdefs.ConfigError{Key: "pool.state_dir", Reason: errdefs.ErrMissingRequired,
				Msg: "neither XDG_STATE_HOME nor HOME is set; set pool.state_dir (PODBOT_POOL_STATE_DIR)"}
		}
	}
	return pool.OpenStore(dir)
}

// poolBackendName is the backend this process's pools live on: the
// configuration's sandbox.backend.
func (f *factory) poolBackendName() (string, error) {
	loaded, err := f.config(nil)
	if err != nil {
		return "", err
	}
	if loaded.Config.Sandbox.Backend == config.BackendKubernetes {
		return pool.BackendKubernetes, nil
	}
	return pool.BackendEngine, nil
}

// wrongBackend is the error for a recorded pool of another backend.
func wrongBackend(spec pool.Spec, backend string) error {
	other := spec.Backend
	if other == "" {
		other = pool.BackendEngine
	}
	return &errdefs.ConfigError{Key: "sandbox.backend", Reason: errdefs.ErrConflict,
		Msg: "pool " + spec.Name + " keeps its members on the " + other + " backend, not on " + backend + "; use --backend " + other + " for it"}
}

// poolSpec reads pool name's spec: recorded by podbot pool create, else
// declared in [[pools]]. A recorded pool of another backend is refused.
func (f *factory) poolSpec(name string) (pool.Spec, error) {
	st, err := f.poolStore()
	if err != nil {
		return pool.Spec{}, err
	}
	spec, err := st.Get(name)
	if err == nil {
		backend, berr := f.poolBackendName()
		if berr != nil {
			return spec, berr
		}
		if !spec.OnBackend(backend) {
			return spec, wrongBackend(spec, backend)
		}
		return spec, nil
	}
	if !errors.Is(err, errdefs.ErrNotFound) {
		return spec, err
	}
	declared, derr := f.declaredPools()
	if derr != nil {
		return spec, derr
	}
	for _, d := range declared {
		if d.Name == name {
			return d, nil
		}
	}
	return spec, err
}

// declaredPools are the [[pools]] of the configuration as specs, on the
// configuration's backend.
func (f *factory) declaredPools() ([]pool.Spec, error) {
	loaded, err := f.config(nil)
	if err != nil {
		return nil, err
	}
	backend, err := f.poolBackendName()
	if err != nil {
		return nil, err
	}
	out := make([]pool.Spec, 0, len(loaded.Config.Pools))
	for _, d := range loaded.Config.Pools {
		s := pool.Spec{Name: d.Name, Kind: d.Kind, Size: int(d.Size), Image: d.Image, Network: d.Network,
			MemoryBytes: d.Memory.Bytes(), NanoCPUs: int64(math.Round(d.CPUs * 1e9)), PidsLimit: d.PidsLimit, ReadOnlyRootfs: d.ReadOnlyRootfs,
			Backend: backend}
		if err := s.Check(); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// allPools lists the recorded pools of this process's backend and then
// the declared ones whose names no recorded pool has.
func (f *factory) allPools() ([]pool.Spec, error) {
	st, err := f.poolStore()
	if err != nil {
		return nil, err
	}
	recorded, err := st.List()
	if err != nil {
		return nil, err
	}
	backend, err := f.poolBackendName()
	if err != nil {
		return nil, err
	}
	var specs []pool.Spec
	taken := map[string]bool{}
	for _, s := range recorded {
		taken[s.Name] = true
		if s.OnBackend(backend) {
			specs = append(specs, s)
		}
	}
	declared, err := f.declaredPools()
	if err != nil {
		return nil, err
	}
	for _, d := range declared {
		if !taken[d.Name] {
			specs = append(specs, d)
		}
	}
	return specs, nil
}

// refuseDeclared fails for a pool that only [[pools]] declares: the file
// is where it changes.
func (f *factory) refuseDeclared(st *pool.Store, name string) error {
	if _, err := st.Get(name); err == nil || !errors.Is(err, errdefs.ErrNotFound) {
		return err
	}
	declared, err := f.declaredPools()
	if err != nil {
		return err
	}
	for _, d := range declared {
		if d.Name == name {
			return &errdefs.ConfigError{Key: config.PoolsKey, Reason: errdefs.ErrConflict,
				Msg: "pool " + name + " is declared in the configuration file ([[pools]]); change or remove it there"}
		}
	}
	return nil
}

// poolBackend returns the pool backend of the configuration's sandbox
// backend: the engine's, set up as a tool session or podbot create of
// this process would be, or the cluster's.
func (f *factory) poolBackend(ctx context.Context) (pool.Backend, error) {
	loaded, err := f.config(nil)
	if err != nil {
		return nil, err
	}
	if loaded.Config.Sandbox.Backend == config.BackendKubernetes {
		return f.kubePoolBackend(loaded.Config)
	}
	sidecar, searched := f.findSidecar()
	if sidecar == "" {
		return nil, &errdefs.FilesystemError{Op: "find sidecar", Path: fmt.Sprint(searched), Reason: errdefs.ErrNotFound,
			Msg: "podbot-sidecar was not found; build it with `make build` (it goes next to podbot) or set PODBOT_SIDECAR_PATH"}
	}
	root, err := f.toolsWorkspaceRoot(loaded.Config.Tools.WorkspaceRoot)
	if err != nil {
		return nil, err
	}
	conn, err := f.engine(ctx)
	if err != nil {
		return nil, err
	}
	return podbot.NewPoolBackend(conn, podbot.PoolOptions{Config: loaded.Config, SidecarPath: sidecar, WorkspaceRoot: root, RuntimeDir: f.getenv("XDG_RUNTIME_DIR"),
		Environ: f.environ, Logger: f.logger}), nil
}

// toolsWorkspaceRoot is tools.workspace_root, else <cache>/tools: where
// tool sessions and tools pool members of this user live.
func (f *factory) toolsWorkspaceRoot(configured string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	cache, err := f.cacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "tools"), nil
}

// refiller returns a refiller for the configuration's pools.
func (f *factory) refiller(ctx context.Context) (*pool.Refiller, error) {
	st, err := f.poolStore()
	if err != nil {
		return nil, err
	}
	b, err := f.poolBackend(ctx)
	if err != nil {
		return nil, err
	}
	loaded, err := f.config(nil)
	if err != nil {
		return nil, err
	}
	return &pool.Refiller{Backend: b, Store: st, MaxAge: loaded.Config.Pool.MaxAge, Logger: f.logger}, nil
}

func newPoolCreateCmd(f *factory) *cobra.Command {
	opts := &poolCreateOptions{}
	cmd := &cobra.Command{
		Use:   "create NAME --size N",
		Short: "Declare a pool and fill it",
		Long: `Declare pool NAME (kept in the pool state directory, pool.state_dir) and
create its members now, so claims work at once even with no podbot pool serve
running. Template flags override the [tools] section (kind tools) or the
[sandbox] section (kind agent); the global --image picks the image. An agent
pool's members take network.mode unless --network (allowlist, none or open)
says otherwise; an allowlist member runs its own egress proxy, denying
everything until a claim writes the claimer's policy.`,
		Example: `  podbot pool create evals --size 4
  podbot pool create scratch --kind agent --size 2 --network none --memory 1g
  podbot tools call read_file --pool evals --args '{"path":"."}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("size") {
				return &usageError{msg: "pool create needs --size N (0 to 64): how many ready members to keep"}
			}
			opts.readOnlySet = cmd.Flags().Changed("read-only")
			spec, err := opts.spec(f, args[0])
			if err != nil {
				return err
			}
			return poolCreateRun(cmd.Context(), f, spec, opts.noFill)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&opts.size, "size", 0, "number of ready members to keep (0 to 64)")
	fl.StringVar(&opts.kind, "kind", pool.KindTools, "member kind: tools (tool sessions) or agent (podbot create sandboxes)")
	fl.StringVar(&opts.network, "network", "", "member network: allowlist, none, open (agent), or bridge/a network name (tools)")
	fl.StringVar(&opts.memory, "memory", "", "memory limit `SIZE`, e.g. 512m")
	fl.Float64Var(&opts.cpus, "cpus", 0, "CPU limit in `CPUS`")
	fl.Int64Var(&opts.pidsLimit, "pids-limit", 0, "process limit `N`")
	fl.BoolVar(&opts.readOnly, "read-only", false, "read-only root filesystem")
	fl.BoolVar(&opts.noFill, "no-fill", false, "only declare the pool; leave creating members to podbot pool serve")
	return cmd
}

// spec builds the pool's spec from the flags.
func (o *poolCreateOptions) spec(f *factory, name string) (pool.Spec, error) {
	spec := pool.Spec{Name: name, Kind: o.kind, Size: o.size, Image: f.global.image, Network: o.network, PidsLimit: o.pidsLimit}
	if o.memory != "" {
		n, err := memoryBytes(o.memory)
		if err != nil {
			return spec, err
		}
		spec.MemoryBytes = n
	}
	if o.cpus < 0 {
		return spec, &usageError{msg: fmt.Sprintf("--cpus %v: expected a positive number of CPUs", o.cpus)}
	}
	if o.cpus > 0 {
		spec.NanoCPUs = int64(math.Round(o.cpus * 1e9))
	}
	if o.readOnlySet {
		ro := o.readOnly
		spec.ReadOnlyRootfs = &ro
	}
	if err := spec.Check(); err != nil {
		return spec, &usageError{msg: err.Error()}
	}
	return spec, nil
}

func poolCreateRun(ctx context.Context, f *factory, spec pool.Spec, noFill bool) error {
	st, err := f.poolStore()
	if err != nil {
		return err
	}
	if spec.Backend, err = f.poolBackendName(); err != nil {
		return err
	}
	if spec.Backend == pool.BackendKubernetes && spec.Kind != pool.KindAgent {
		return &usageError{msg: "pool " + spec.Name + ": the kubernetes backend keeps agent pools only (tool sessions do not run on Pods yet); use --kind agent"}
	}
	if _, err := f.poolSpec(spec.Name); err == nil {
		return &errdefs.ConfigError{Key: "pool", Reason: errdefs.ErrAlreadyExists,
			Msg: "pool " + spec.Name + " already exists; change its size with `podbot pool resize` or remove it with `podbot pool rm`"}
	}
	if err := st.Put(spec); err != nil {
		return err
	}
	if noFill {
		return nil
	}
	return poolFill(ctx, f, spec)
}

// poolFill reconciles one pool once and reports its status on stderr.
func poolFill(ctx context.Context, f *factory, spec pool.Spec) error {
	r, err := f.refiller(ctx)
	if err != nil {
		return err
	}
	t0 := time.Now()
	st, err := r.Reconcile(ctx, spec)
	if err != nil {
		return err
	}
	f.logger.Info("pool ready", "pool", spec.Name, "ready", st.Ready, "size", spec.Size, "took", time.Since(t0).Round(time.Millisecond))
	return nil
}

// poolRow is one pool as podbot pool ls shows it.
type poolRow struct {
	pool.Spec
	Ready     int       `json:"ready"`
	Starting  int       `json:"starting"`
	Claimed   int       `json:"claimed"`
	Failing   int       `json:"failing"`
	LastError string    `json:"last_error,omitempty"`
	RetryAt   time.Time `json:"retry_at,omitzero"`
	UpdatedAt time.Time `json:"status_updated_at,omitzero"`
}

func newPoolLsCmd(f *factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List pools: size, ready, claimed, failing and the last error",
		Long: `List the pools with the members the engine has now (ready, starting,
claimed) and what the refiller last recorded (failing creates in a row, the
last error, when it retries).`,
		Example: "  podbot pool ls\n  podbot pool ls --json | jq '.[] | select(.ready < .size)'",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows, err := poolRows(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(f.ios.Out, rows)
			}
			tw := tabwriter.NewWriter(f.ios.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tKIND\tSIZE\tREADY\tSTARTING\tCLAIMED\tFAILING\tLAST ERROR")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", r.Name, r.Kind, r.Size, r.Ready, r.Starting, r.Claimed, r.Failing,
					oneLine(r.LastError, 80))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the pools as JSON")
	return cmd
}

func poolRows(ctx context.Context, f *factory) ([]poolRow, error) {
	st, err := f.poolStore()
	if err != nil {
		return nil, err
	}
	specs, err := f.allPools()
	if err != nil {
		return nil, err
	}
	b, err := f.poolBackend(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]poolRow, 0, len(specs))
	for _, s := range specs {
		row := poolRow{Spec: s}
		ms, err := b.Members(ctx, s.Name)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			switch m.State {
			case pool.StateReady:
				row.Ready++
			case pool.StateStarting:
				row.Starting++
			case pool.StateClaimed:
				row.Claimed++
			}
		}
		status, err := st.GetStatus(s.Name)
		if err != nil {
			return nil, err
		}
		row.Failing, row.LastError, row.RetryAt, row.UpdatedAt = status.Failing, status.LastError, status.RetryAt, status.UpdatedAt
		rows = append(rows, row)
	}
	return rows, nil
}

// oneLine shortens s to n runes on one line for a table cell.
func oneLine(s string, n int) string {
	r := []rune(s)
	for i, c := range r {
		if c == '\n' || c == '\r' || c == '\t' || c < 0x20 {
			r[i] = ' '
		}
	}
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return string(r)
}

func newPoolResizeCmd(f *factory) *cobra.Command {
	var noFill bool
	cmd := &cobra.Command{
		Use:     "resize NAME N",
		Short:   "Change how many ready members a pool keeps",
		Example: "  podbot pool resize evals 8",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var n int
			if _, err := fmt.Sscanf(args[1], "%d", &n); err != nil || n < 0 || n > pool.MaxSize || fmt.Sprint(n) != args[1] {
				return &usageError{msg: fmt.Sprintf("size %q: expected a whole number from 0 to %d", args[1], pool.MaxSize)}
			}
			st, err := f.poolStore()
			if err != nil {
				return err
			}
			if err := f.refuseDeclared(st, args[0]); err != nil {
				return err
			}
			spec, err := f.poolSpec(args[0])
			if err != nil {
				return err
			}
			spec.Size = n
			if err := st.Put(spec); err != nil {
				return err
			}
			if noFill {
				return nil
			}
			return poolFill(cmd.Context(), f, spec)
		},
	}
	cmd.Flags().BoolVar(&noFill, "no-fill", false, "only record the new size; leave creating or removing members to podbot pool serve")
	return cmd
}

func newPoolRmCmd(f *factory) *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove a pool and its unclaimed members (claimed ones keep running)",
		Long: `Remove pool NAME: its ready, starting and failed members are removed (a
ready one is taken first, so no claim gets it meanwhile) and its definition
and status are deleted. Sandboxes already claimed from it are ordinary
sandboxes and keep running.`,
		Example: "  podbot pool rm evals",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := f.poolStore()
			if err != nil {
				return err
			}
			if err := f.refuseDeclared(st, args[0]); err != nil {
				return err
			}
			if _, err := f.poolSpec(args[0]); err != nil {
				return err
			}
			b, err := f.poolBackend(ctx)
			if err != nil {
				return err
			}
			// The definition goes first, so a refiller stops refilling.
			if err := st.Delete(args[0]); err != nil {
				return err
			}
			ms, err := b.Members(ctx, args[0])
			if err != nil {
				return err
			}
			var errs []error
			removed := 0
			for _, m := range ms {
				if m.State == pool.StateClaimed {
					continue
				}
				if err := b.Remove(ctx, m); err != nil {
					if !errors.Is(err, pool.ErrTaken) {
						errs = append(errs, err)
					}
					continue
				}
				removed++
			}
			f.logger.Info("pool removed", "pool", args[0], "members_removed", removed)
			return errors.Join(errs...)
		},
	}
}

func newPoolServeCmd(f *factory) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Keep every pool at size until stopped (run it as a service)",
		Long: `Check every pool each pool.refill_interval: remove members that stopped,
died, stayed half-made for two minutes or aged past pool.max_age, create the
missing ones (two at a time), and record each pool's status for podbot pool
ls. A pool whose creates fail backs off (2s doubling to 5m) and shows the
error. An engine it cannot reach when it starts (not up yet, restarting) is
waited for (2s doubling to 30s), not an exit. Stop it with Ctrl-C or SIGTERM; claims keep working without it until
a pool is empty. contrib/systemd/podbot-pool.service runs it as a user
service.`,
		Example: "  podbot pool serve\n  systemctl --user enable --now podbot-pool.service",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM)
			defer stop()
			r, err := awaitEngine(ctx, f.logger, serveRetryFirst, func() (*pool.Refiller, error) { return f.refiller(ctx) })
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return err
			}
			st, err := f.poolStore()
			if err != nil {
				return err
			}
			loaded, err := f.config(nil)
			if err != nil {
				return err
			}
			f.logger.Info("pool refiller started", "state_dir", st.Dir(), "interval", loaded.Config.Pool.RefillInterval, "max_age", loaded.Config.Pool.MaxAge)
			err = r.Serve(ctx, f.allPools, loaded.Config.Pool.RefillInterval)
			if ctx.Err() != nil {
				return nil
			}
			return err
		},
	}
}

// serveRetryFirst is pool serve's first wait for an engine it cannot reach;
// each further wait doubles, up to serveRetryMax.
const (
	serveRetryFirst = 2 * time.Second
	serveRetryMax   = 30 * time.Second
)

// awaitEngine calls connect until it succeeds, retrying while the engine
// cannot be reached (not listening yet, its socket not there yet, no
// answer in time, a connection reset while it starts) with a doubling
// wait from first, each retry logged; any other error is returned at
// once, and ctx ending returns ctx.Err(). A refiller run as a service may
// start before its engine, or meet it restarting, and must not exit then.
func awaitEngine[T any](ctx context.Context, logger *slog.Logger, first time.Duration, connect func() (T, error)) (T, error) {
	wait := first
	for {
		v, err := connect()
		if err == nil || !engineUnreachable(err) {
			return v, err
		}
		logger.Warn("cannot reach the engine; waiting for it", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, serveRetryMax)
	}
}

// engineUnreachable reports whether err says the engine is not there or
// not answering, as opposed to a refusal or bad configuration.
func engineUnreachable(err error) bool {
	return errors.Is(err, errdefs.ErrConnectionFailed) || errors.Is(err, errdefs.ErrSocketNotFound) || errors.Is(err, errdefs.ErrTimeout)
}
