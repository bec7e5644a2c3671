package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/tools"
)

// Container lifecycle limits.
const (
	// startTimeout bounds creating and starting a container, on a context
	// detached from the caller's cancellation so no half-made container is
	// left behind by a cancelled call.
	startTimeout = 2 * time.Minute
	// minIdleRecheck is the shortest wait before the idle check runs again.
	minIdleRecheck = 100 * time.Millisecond
	// streamEndGrace is how long a failed call waits to see whether the
	// sidecar stream ended (and the call should be retried).
	streamEndGrace = time.Second
)

// sessionPrefix starts every container session directory's name.
const sessionPrefix = "session-"

// Container is the container backend: the tools served by podbot-sidecar
// in a hardened container, over one MCP stream.
type Container struct {
	common
	copts ContainerOptions
	rt    runtime
	dir   string // session directory
	ws    string // host directory behind /workspace
	// remote is set when the sandbox holds the workspace itself (a
	// RemoteRuntime): there is no session directory on the host.
	remote bool

	life        sync.Mutex // guards the fields below; held while (re)creating
	cur         *live
	closed      bool
	shared      bool // workspace permissions opened to the container user
	link        *sessionLink
	member      *memberStart // set while a pool member is made
	generation  int
	recreations int
	renaming    chan struct{} // closed once a pending rename settled (SettleRename)

	inflight atomic.Int64
	lastUsed atomic.Int64 // unix nanoseconds
}

// live is one running container with its sidecar session.
type live struct {
	id, name  string
	cpus      string
	link      string // LinkSocket or LinkExec
	st        *stream
	cs        *mcp.ClientSession
	startedAt time.Time
	timers    []*time.Timer
	detached  atomic.Bool // Detach closed the stream on purpose
}

func (lc *live) dead() bool { return lc.detached.Load() || lc.st.dead() }

// NewContainer prepares a container session on conn. Nothing is created
// in the engine until the first call; the workspace directory is made (and
// hydrated from opts.Mounts) now, so a bad mount fails here.
func NewContainer(ctx context.Context, conn *engine.Conn, opts ContainerOptions) (*Container, error) {
	rt, err := newEngineRuntime(conn, opts)
	if err != nil {
		return nil, err
	}
	return newContainer(ctx, rt, opts, sessionPrefix, "")
}

// newContainer makes a session directory <root>/<prefix><id> for a new
// session of opts: a copy of cloneFrom's tree, else hydrated from
// opts.Mounts.
func newContainer(_ context.Context, rt runtime, opts ContainerOptions, prefix, cloneFrom string) (*Container, error) {
	c, err := newCommon(BackendContainer, opts.Options)
	if err != nil {
		return nil, err
	}
	root := opts.WorkspaceRoot
	if root == "" {
		if root, err = DefaultWorkspaceRoot(); err != nil {
			return nil, err
		}
	}
	dir, ws, err := makeSessionDir(root, prefix, c.id)
	if err != nil {
		return nil, err
	}
	if cloneFrom != "" {
		err = copyTree(cloneFrom, ws, maxCloneBytes)
	} else {
		err = hydrate(ws, opts.Mounts, opts.AllowedHostRoots)
	}
	if err != nil {
		removeSessionDir(dir)
		return nil, err
	}
	return &Container{common: c, copts: opts, rt: rt, dir: dir, ws: ws}, nil
}

// Specs describes the tools, podman_shell included.
func (s *Container) Specs() []tools.Spec { return append(tools.Specs(), tools.PodmanShellSpec()) }

// Prompt is tools.Prompt.
func (s *Container) Prompt() string { return tools.Prompt() }

// Info reports the session's state.
func (s *Container) Info() Info {
	s.life.Lock()
	defer s.life.Unlock()
	in := Info{ID: s.id, Backend: BackendContainer, WorkspaceDir: s.ws, Recreations: s.recreations}
	if s.cur != nil {
		in.ContainerID, in.ContainerName, in.StartedAt, in.CPUSet, in.Link = s.cur.id, s.cur.name, s.cur.startedAt, s.cur.cpus, s.cur.link
	}
	if n := s.lastUsed.Load(); n != 0 {
		in.LastUsedAt = time.Unix(0, n)
	}
	return in
}

// Call runs a tool in the sandbox, creating the container on first use.
func (s *Container) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	start := s.now()
	args = s.withDefaults(name, normalizeArgs(args))
	out, container, err := s.call(ctx, name, args)
	s.lastUsed.Store(s.now().UnixNano())
	s.recordCall(name, args, out, container, start, err)
	return out, err
}

func (s *Container) call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, string, error) {
	if name == tools.PodmanShellTool {
		return s.podmanShell(ctx, args)
	}
	if !tools.IsTool(name) {
		return nil, "", unknownTool(name, s.Specs())
	}
	return s.send(ctx, name, args)
}

// send delivers a call to the sidecar. When the container died under the
// call (its stream ended), it is recreated and the call retried once.
func (s *Container) send(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, string, error) {
	lc, err := s.acquire(ctx)
	if err != nil {
		return nil, "", err
	}
	out, err := callSidecar(ctx, lc.cs, name, args)
	s.inflight.Add(-1)
	if err == nil || isToolError(err) || ctx.Err() != nil || !streamFailed(lc, err) {
		return out, lc.name, err
	}
	s.logger.Warn("sidecar stream ended during a call; recovering", "container", lc.name, "tool", name, "error", err)
	lc2, rerr := s.acquireAfter(ctx, lc)
	if rerr != nil {
		return nil, lc.name, errors.Join(err, rerr)
	}
	out, err = callSidecar(ctx, lc2.cs, name, args)
	s.inflight.Add(-1)
	return out, lc2.name, err
}

// streamFailed reports whether a call's error came from the stream
// ending: the SDK says the connection closed, or the sidecar's stdout ends
// soon after (a write can fail before the read side sees the end).
func streamFailed(lc *live, err error) bool {
	if errors.Is(err, mcp.ErrConnectionClosed) || lc.dead() {
		return true
	}
	t := time.NewTimer(streamEndGrace)
	defer t.Stop()
	select {
	case <-lc.st.done:
		return true
	case <-t.C:
		return false
	}
}

// acquire returns a live container for one call, creating or recovering
// it as needed, and counts the call in flight.
func (s *Container) acquire(ctx context.Context) (*live, error) {
	return s.acquireAfter(ctx, nil)
}

// acquireAfter is acquire, treating failed (if not nil) as dead.
func (s *Container) acquireAfter(ctx context.Context, failed *live) (*live, error) {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return nil, errClosed(s.id)
	}
	if s.cur != nil && (s.cur == failed || s.cur.dead()) {
		if err := s.recoverLocked(ctx); err != nil {
			return nil, err
		}
	}
	if s.cur == nil {
		if err := s.startLocked(ctx, false); err != nil {
			return nil, err
		}
	}
	s.inflight.Add(1)
	return s.cur, nil
}

// recoverLocked replaces the dead (or detached) current container's
// stream: a new stream into the same container if it still runs, else a
// new container with the workspace intact.
func (s *Container) recoverLocked(ctx context.Context) error {
	old := s.cur
	s.dropLocked(ctx, false)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	if s.reconnectLocked(ctx, rctx, old) {
		return nil
	}
	if err := s.rt.remove(rctx, old.id, old.name); err != nil {
		s.logger.Warn("cannot remove the failed sandbox", "container", old.name, "error", err)
	}
	if err := s.startLocked(ctx, true); err != nil {
		return err
	}
	return nil
}

// reconnectLocked connects anew to old's container (connectLocked) and
// reports whether it did.
func (s *Container) reconnectLocked(ctx, rctx context.Context, old *live) bool {
	err := s.connectLocked(ctx, rctx, old)
	if err == nil {
		s.lifecycle(EventReconnected, old.name, 0)
		return true
	}
	if !errors.Is(err, errdefs.ErrNotFound) {
		s.logger.Warn("cannot reattach to the running sandbox; recreating it", "container", old.name, "error", err)
	}
	return false
}

// connectLocked connects to old's running container and makes it the
// current one, its timers armed: over its socket if the session has one
// (which answering proves the container runs), else, if the engine says
// it still runs, over a new exec. A container that no longer runs is an
// error matching errdefs.ErrNotFound.
func (s *Container) connectLocked(ctx, rctx context.Context, old *live) error {
	if s.link == nil {
		running, err := s.rt.running(rctx, old.id)
		if err != nil {
			return err
		}
		if !running {
			return &errdefs.ContainerError{Op: "reattach", Container: old.name, Reason: errdefs.ErrNotFound, Msg: "the container no longer runs"}
		}
	}
	st, link, err := s.connectStream(rctx, old.id, old.name, false)
	if err != nil {
		return err
	}
	cs, err := connectSidecar(ctx, st, s.copts.Version, old.name)
	if err != nil {
		st.Close()
		return err
	}
	s.cur = &live{id: old.id, name: old.name, cpus: old.cpus, link: link, st: st, cs: cs, startedAt: old.startedAt}
	s.armTimersLocked(s.cur)
	return nil
}

// startLocked creates and starts a container and connects to its sidecar.
func (s *Container) startLocked(ctx context.Context, afterFailure bool) error {
	t0 := s.now()
	if err := s.shareLocked(); err != nil {
		return err
	}
	s.generation++
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	spec := containerSpec{sessionID: s.id, name: s.containerName(), workspaceDir: s.ws, linkDir: s.prepareLinkLocked()}
	if m := s.member; m != nil {
		spec.name, spec.labels = m.name, m.labels
	}
	sc, err := s.rt.start(dctx, spec)
	if err != nil {
		return err
	}
	s.lifecycle(EventCreated, sc.name, s.now().Sub(t0))
	fail := func(err error) error {
		cctx, ccancel := engine.CleanupContext(ctx)
		defer ccancel()
		if rerr := s.rt.remove(cctx, sc.id, sc.name); rerr != nil {
			s.logger.Warn("cannot remove a sandbox that failed to start", "container", sc.name, "error", rerr)
		}
		return err
	}
	st, link, err := s.connectStream(dctx, sc.id, sc.name, true)
	if err != nil {
		return fail(err)
	}
	cs, err := connectSidecar(ctx, st, s.copts.Version, sc.name)
	if err != nil {
		return fail(err)
	}
	lc := &live{id: sc.id, name: sc.name, cpus: sc.cpus, link: link, st: st, cs: cs, startedAt: s.now()}
	s.cur = lc
	s.armTimersLocked(lc)
	s.lifecycle(EventStarted, sc.name, s.now().Sub(t0))
	if afterFailure {
		s.recreations++
		s.lifecycle(EventRecreatedAfterFailure, sc.name, s.now().Sub(t0))
	}
	return nil
}

// shareLocked opens the workspace tree to the container user, once.
func (s *Container) shareLocked() error {
	if s.shared {
		return nil
	}
	user := s.copts.User
	if user == "" {
		user = launchplan.ToolsUser
	}
	if err := shareWith(s.ws, user); err != nil {
		return err
	}
	s.shared = true
	return nil
}

// containerName is unique per session and generation, so a recreated
// container never collides with one the engine is still removing.
func (s *Container) containerName() string { return ContainerName(s.id, s.generation) }

// ContainerName is the name of a tool session's container: unique per
// session id and generation (1 for the first container).
func ContainerName(sessionID string, generation int) string {
	short := strings.ToLower(strings.NewReplacer("-", "", "_", "", ".", "").Replace(sessionID))
	if len(short) > 12 {
		short = short[:12]
	}
	return fmt.Sprintf("podbot-tools-%s-%d", short, generation)
}

// armTimersLocked starts the idle and uptime timers of a new container.
func (s *Container) armTimersLocked(lc *live) {
	if d := s.copts.IdleTimeout; d > 0 {
		s.lastUsed.CompareAndSwap(0, s.now().UnixNano())
		s.scheduleIdle(lc, d)
	}
	if d := s.copts.MaxUptime; d > 0 {
		if left := d - s.now().Sub(lc.startedAt); left > 0 {
			d = left
		}
		lc.timers = append(lc.timers, time.AfterFunc(d, func() { s.expire(lc, EventUptimeLimit) }))
	}
}

// scheduleIdle runs the idle check after d.
func (s *Container) scheduleIdle(lc *live, d time.Duration) {
	lc.timers = append(lc.timers, time.AfterFunc(max(d, minIdleRecheck), func() { s.idleCheck(lc) }))
}

// idleCheck removes lc if no call ran for IdleTimeout, else checks again later.
func (s *Container) idleCheck(lc *live) {
	s.life.Lock()
	defer s.life.Unlock()
	if s.cur != lc || s.closed {
		return
	}
	idle := s.now().Sub(time.Unix(0, s.lastUsed.Load()))
	if s.inflight.Load() > 0 || idle < s.copts.IdleTimeout {
		s.scheduleIdle(lc, s.copts.IdleTimeout-idle)
		return
	}
	s.dropLocked(context.Background(), true)
	s.lifecycle(EventIdleCleanup, lc.name, idle)
}

// expire removes lc when it reached its uptime limit.
func (s *Container) expire(lc *live, kind string) {
	s.life.Lock()
	defer s.life.Unlock()
	if s.cur != lc || s.closed {
		return
	}
	s.dropLocked(context.Background(), true)
	s.lifecycle(kind, lc.name, s.now().Sub(lc.startedAt))
}

// dropLocked forgets the current container: stops its timers, closes its
// stream and, with remove, removes it from the engine.
func (s *Container) dropLocked(ctx context.Context, remove bool) error {
	lc := s.cur
	if lc == nil {
		return nil
	}
	s.cur = nil
	for _, t := range lc.timers {
		t.Stop()
	}
	if lc.st != nil { // nil for an adopted container not yet connected
		lc.st.Close()
		lc.cs.Close()
	}
	if !remove {
		return nil
	}
	cctx, cancel := engine.CleanupContext(ctx)
	defer cancel()
	return s.rt.remove(cctx, lc.id, lc.name)
}

// Detach closes the connection to the sidecar and leaves the container
// running, its timers armed: the next call connects to it again, over
// the session's socket when it has one (no exec), else with an exec. A
// host that hands a running sandbox from one holder to another uses it,
// and it measures what that second connection costs.
func (s *Container) Detach() {
	s.life.Lock()
	defer s.life.Unlock()
	if lc := s.cur; lc != nil && !lc.detached.Swap(true) && lc.st != nil {
		lc.st.Close()
		lc.cs.Close()
	}
}

// Clone returns a new container session with the same settings whose
// workspace starts as a copy of this one's. It gets its own container on
// its first call.
func (s *Container) Clone(ctx context.Context) (Session, error) {
	s.life.Lock()
	closed := s.closed
	s.life.Unlock()
	if closed {
		return nil, errClosed(s.id)
	}
	if s.remote {
		return nil, errRemote("Clone")
	}
	opts := s.copts
	opts.ID = ""
	return newContainer(ctx, s.rt, opts, sessionPrefix, s.ws)
}

// Close removes the container and the workspace directory.
func (s *Container) Close(ctx context.Context) error {
	s.awaitRename(ctx)
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return nil // closed already, or released
	}
	s.closed = true
	var name string
	if s.cur != nil {
		name = s.cur.name
	}
	err := s.dropLocked(ctx, true)
	if rerr := removeSessionDir(s.dir); rerr != nil {
		err = errors.Join(err, rerr)
	}
	s.lifecycle(EventClosed, name, 0)
	return err
}

// WorkspaceDir is the host directory behind /workspace.
// It is empty when the sandbox holds the workspace (NewRemoteContainer).
func (s *Container) WorkspaceDir() string {
	if s.remote {
		return ""
	}
	return filepath.Clean(s.ws)
}
