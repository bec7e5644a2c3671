package sandbox

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/sidecarsock"
	"github.com/podbot/podbot/tools"
)

// SidecarTarget is where the podbot-sidecar binary appears inside a sandbox.
const SidecarTarget = "/usr/local/libexec/podbot/podbot-sidecar"

// tmpfsOptions are the options of the tool sandbox's /tmp: writable and
// executable scratch space beside the read-only root.
const tmpfsOptions = launchplan.TmpfsTmpOptions + ",exec"

// engineRuntime runs tool sessions on a container engine.
type engineRuntime struct {
	conn    *engine.Conn
	opts    ContainerOptions
	sidecar string // canonical host path
	user    string
	logger  *slog.Logger
	// hostCPUs lists the CPUs an automatic placement chooses from.
	hostCPUs func() []int
	// pinRefused is set once the engine refused a CPU placement podbot
	// chose by itself: later containers start unpinned at once.
	pinRefused atomic.Bool
	// noLink is set once a container's sidecar socket never appeared:
	// later containers start without a link directory.
	noLink atomic.Bool
}

func newEngineRuntime(conn *engine.Conn, opts ContainerOptions) (*engineRuntime, error) {
	if conn == nil {
		return nil, &errdefs.ConfigError{Key: "engine_socket", Reason: errdefs.ErrMissingRequired,
			Msg: "the container backend needs an engine connection"}
	}
	if err := checkCPUSet(opts.CPUSet); err != nil {
		return nil, err
	}
	sidecar, err := CanonicalSidecar(opts.SidecarPath)
	if err != nil {
		return nil, err
	}
	user := opts.User
	if user == "" {
		user = launchplan.ToolsUser
	}
	return &engineRuntime{conn: conn, opts: opts, sidecar: sidecar, user: user, logger: loggerOrDiscard(opts.Logger),
		hostCPUs: availableCPUs}, nil
}

// CanonicalSidecar resolves the host's podbot-sidecar path (absolute, symlinks
// resolved) and checks it is an executable regular file. Every sandbox podbot
// creates mounts the binary it returns.
func CanonicalSidecar(p string) (string, error) {
	if p == "" {
		return "", &errdefs.FilesystemError{Op: "find sidecar", Path: "podbot-sidecar", Reason: errdefs.ErrNotFound,
			Msg: "podbot-sidecar was not found; build it with `make build` (it goes next to podbot) or set PODBOT_SIDECAR_PATH"}
	}
	abs, err := filepath.Abs(p)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", &errdefs.FilesystemError{Op: "resolve sidecar", Path: p, Reason: errdefs.ErrNotFound,
			Msg: "podbot-sidecar is missing; build it with `make build` or set PODBOT_SIDECAR_PATH", Err: err}
	}
	st, err := os.Stat(abs)
	if err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
		return "", &errdefs.FilesystemError{Op: "check sidecar", Path: abs, Reason: errdefs.ErrInvalidValue,
			Msg: "podbot-sidecar must be an executable regular file; build it with `make build` or set PODBOT_SIDECAR_PATH", Err: err}
	}
	return abs, nil
}

// plan builds the hardened launch plan of one session container, pinned
// to the CPUs of cpus (a CPU list) unless it is empty.
func (r *engineRuntime) plan(spec containerSpec, cpus string) (launchplan.Plan, error) {
	o := r.opts
	ro := o.ReadOnlyRootfs
	if ro == nil {
		t := true
		ro = &t
	}
	plan, err := launchplan.Normalize(launchplan.Request{
		Intent:      launchplan.IntentTools,
		Image:       o.Image,
		Name:        spec.name,
		SessionID:   spec.sessionID,
		InitCommand: r.initCommand(spec),
		Workspace: launchplan.Workspace{Strategy: launchplan.WorkspaceHostMount,
			HostPath: spec.workspaceDir, ContainerPath: tools.WorkspaceName},
		EngineSocketPaths: o.EngineSocketPaths,
		Sandbox: launchplan.Sandbox{
			PidsLimit: o.PidsLimit, MemoryBytes: o.MemoryBytes, NanoCPUs: o.NanoCPUs,
			Network: o.Network, ReadOnlyRootfs: ro, User: r.user,
		},
		Labels:  o.Labels,
		Version: o.Version,
	})
	if err != nil {
		return plan, err
	}
	for k, v := range spec.labels {
		plan.Labels[k] = v
	}
	err = plan.Apply(WithSidecarMount(r.sidecar), withExecTmp(*ro), launchplan.WithCPUSet(cpus), withLinkMount(spec.linkDir))
	return plan, err
}

// initCommand is the container's command: podbot-sidecar init, which with
// a link directory also starts the sidecar serving on its socket.
func (r *engineRuntime) initCommand(spec containerSpec) []string {
	if spec.linkDir == "" {
		return []string{SidecarTarget, "init"}
	}
	serve := sidecarServeCommand(r.opts.NanoCPUs, r.opts.BatchScheduling == nil || *r.opts.BatchScheduling)
	argv := []string{SidecarTarget, "init", "serve", "--listen", sidecarsock.Target}
	return append(argv, serve[2:]...)
}

// withLinkMount bind-mounts a session's link directory (if any) read-write
// at sidecarsock.Target.
func withLinkMount(dir string) launchplan.Option {
	return func(p *launchplan.Plan) error {
		if dir == "" {
			return nil
		}
		for _, m := range p.Mounts {
			if m.Target == sidecarsock.Target {
				return &errdefs.ConfigError{Key: "sidecar", Reason: errdefs.ErrConflict,
					Msg: "another mount already claims " + sidecarsock.Target}
			}
		}
		p.Mounts = append(p.Mounts, launchplan.Mount{Source: dir, Target: sidecarsock.Target, Origin: "sidecar socket"})
		return nil
	}
}

// linkOwner gives link directories to the container user when podbot
// runs as root on Linux, the user is numeric and no earlier socket failed
// to appear; a rootless engine maps the container's users to other host
// ids, and there the session keeps the exec stream.
func (r *engineRuntime) linkOwner() (uid, gid int, ok bool) {
	if goruntime.GOOS != "linux" || os.Geteuid() != 0 || r.noLink.Load() {
		return 0, 0, false
	}
	return parseNumericUser(r.user)
}

func (r *engineRuntime) linkMissing() { r.noLink.Store(true) }

// WithSidecarMount bind-mounts the host's podbot-sidecar binary read-only at
// SidecarTarget. Plan.Apply runs the socket guard over it; a plan that
// already mounts something there is refused.
func WithSidecarMount(hostPath string) launchplan.Option {
	return func(p *launchplan.Plan) error {
		for _, m := range p.Mounts {
			if m.Target == SidecarTarget {
				return &errdefs.ConfigError{Key: "sidecar", Reason: errdefs.ErrConflict,
					Msg: "another mount already claims " + SidecarTarget}
			}
		}
		p.Mounts = append(p.Mounts, launchplan.Mount{Source: hostPath, Target: SidecarTarget, ReadOnly: true, Origin: "sidecar"})
		return nil
	}
}

// withExecTmp lets programs run from /tmp when the root is read-only.
func withExecTmp(readOnly bool) launchplan.Option {
	return func(p *launchplan.Plan) error {
		if readOnly && p.Tmpfs != nil {
			p.Tmpfs["/tmp"] = tmpfsOptions
		}
		return nil
	}
}

func (r *engineRuntime) start(ctx context.Context, spec containerSpec) (_ startedContainer, err error) {
	where := r.place(ctx, spec.name)
	plan, err := r.plan(spec, where.cpus)
	if err != nil {
		return startedContainer{}, err
	}
	if err := r.conn.EnsureImage(ctx, plan.Image, nil); err != nil {
		return startedContainer{}, imageHint(err, plan.Image)
	}
	nw := r.opts.EngineNetwork
	if nw != nil {
		if err := nw.Prepare(ctx, &plan); err != nil {
			return startedContainer{}, err
		}
		defer func() {
			if err != nil {
				cctx, cancel := engine.CleanupContext(ctx)
				defer cancel()
				err = errors.Join(err, nw.Remove(cctx, plan.Name))
			}
		}()
	}
	render := func() (*container.Config, *container.HostConfig, *network.NetworkingConfig) {
		cfg, hc, nc := plan.Render()
		if nw != nil {
			nw.HostConfig(plan, hc)
		}
		return cfg, hc, nc
	}
	cfg, hc, nc := render()
	id, err := r.conn.CreateAndStart(ctx, plan.Name, cfg, hc, nc)
	if err != nil && where.auto && ctx.Err() == nil {
		// The engine may be confined to fewer CPUs than podbot sees (a
		// cpuset of its own): a CPU podbot chose by itself is no reason
		// to fail the call, so the container starts unpinned instead.
		r.logger.Info("tool-session container could not be pinned; starting it and later ones unpinned",
			"container", plan.Name, "cpuset", where.cpus, "error", err)
		r.pinRefused.Store(true)
		if err = plan.Apply(launchplan.WithCPUSet("")); err != nil {
			return startedContainer{}, err
		}
		cfg, hc, nc = render()
		id, err = r.conn.CreateAndStart(ctx, plan.Name, cfg, hc, nc)
	}
	if err != nil {
		return startedContainer{}, err
	}
	if nw != nil {
		if err := nw.Started(ctx, plan, id); err != nil {
			cctx, cancel := engine.CleanupContext(ctx)
			defer cancel()
			if rerr := r.conn.Remove(cctx, id, true); rerr != nil && !errors.Is(rerr, errdefs.ErrNotFound) {
				err = errors.Join(err, rerr)
			}
			return startedContainer{}, err
		}
	}
	return startedContainer{id: id, name: plan.Name, cpus: plan.Resources.CPUSet}, nil
}

// imageHint makes a missing tool image say how to get one.
func imageHint(err error, image string) error {
	var ce *errdefs.ContainerError
	if !errors.As(err, &ce) {
		return err
	}
	out := *ce
	out.Msg = "the tool-session image " + image + " is not available: " + ce.Msg
	out.Hint = "build an image with python3 (`podbot image build --bootstrap` makes localhost/podbot-sandbox:latest) and set tools.image (or PODBOT_TOOLS_IMAGE) to it"
	return &out
}

// sidecarServeCommand is the command of the exec that carries a session's
// MCP stream. The host reads each result's JSON text only (callSidecar),
// so the sidecar leaves out the structured copy. nanoCPUs is the
// container's CPU limit as configured (0 the default, negative none); the
// sidecar runs its Go code on as many CPUs as that limit rounds up to.
// With batch it runs under SCHED_BATCH, and so do the commands it starts:
// its wake-ups wait for a running command instead of preempting it.
func sidecarServeCommand(nanoCPUs int64, batch bool) []string {
	argv := []string{SidecarTarget, "serve", "--root", tools.WorkspaceName, "--tmp", "/tmp", "--structured=false"}
	if batch {
		argv = append(argv, "--batch")
	}
	if procs := wholeCPUs(nanoCPUs); procs > 0 {
		argv = append(argv, "--gomaxprocs", strconv.Itoa(procs))
	}
	return argv
}

// wholeCPUs is a session container's CPU limit (0 the default, negative
// none) rounded up to whole CPUs, or 0 without a limit: the sidecar's
// GOMAXPROCS and how many CPUs an automatic placement pins.
func wholeCPUs(nanoCPUs int64) int {
	if nanoCPUs == 0 {
		nanoCPUs = launchplan.ToolsNanoCPUs
	}
	if nanoCPUs < 0 {
		return 0
	}
	const perCPU = 1_000_000_000
	const most = 1024 // the most the sidecar accepts
	return int(min((nanoCPUs+perCPU-1)/perCPU, most))
}

func (r *engineRuntime) attach(ctx context.Context, id string) (*stream, error) {
	api := r.conn.API()
	created, err := api.ContainerExecCreate(ctx, id, container.ExecOptions{
		User:         r.user,
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		WorkingDir:   tools.WorkspaceName,
		Cmd:          sidecarServeCommand(r.opts.NanoCPUs, r.opts.BatchScheduling == nil || *r.opts.BatchScheduling),
	})
	if err != nil {
		return nil, engine.Classify("exec create", r.conn.Endpoint().String(), id, err)
	}
	hj, err := api.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, engine.Classify("exec attach", r.conn.Endpoint().String(), id, err)
	}
	// The sidecar's stdout is demultiplexed as the MCP client reads it:
	// no copying goroutine or pipe between the stream and the client.
	tail := newTailBuffer(stderrTail)
	stdout := &endReader{r: engine.NewDemuxReader(hj.Reader, tail), close: hj.Close, done: make(chan struct{})}
	return &stream{
		stdout: stdout,
		stdin:  halfCloser{hj: hj.Conn, closeWrite: hj.CloseWrite},
		done:   stdout.done,
		stderr: tail,
		closeFn: func() error {
			hj.Close()
			return nil
		},
	}, nil
}

// endReader closes done when its reader fails or ends; Close closes the
// exec stream, which unblocks a pending Read.
type endReader struct {
	r     io.Reader
	close func()
	done  chan struct{}
	once  sync.Once
}

func (e *endReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.done) })
	}
	return n, err
}

func (e *endReader) Close() error {
	e.close()
	return nil
}

// halfCloser is the exec's stdin: Close half-closes, so the sidecar sees EOF.
type halfCloser struct {
	hj         io.Writer
	closeWrite func() error
}

func (h halfCloser) Write(p []byte) (int, error) { return h.hj.Write(p) }
func (h halfCloser) Close() error                { return h.closeWrite() }

func (r *engineRuntime) running(ctx context.Context, id string) (bool, error) {
	info, err := r.conn.Inspect(ctx, id, false)
	if errors.Is(err, errdefs.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return info.State != nil && info.State.Running, nil
}

func (r *engineRuntime) remove(ctx context.Context, id, name string) error {
	err := r.conn.Remove(ctx, id, true)
	if errors.Is(err, errdefs.ErrNotFound) {
		err = nil
	}
	if nw := r.opts.EngineNetwork; nw != nil && name != "" {
		err = errors.Join(err, nw.Remove(ctx, name))
	}
	return err
}
