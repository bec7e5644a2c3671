package podbot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/docker/docker/client"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/pool"
	"github.com/podbot/podbot/sandbox"
)

// MemberPrefix starts the container name of every unclaimed pool member:
// podbot-pool-<pool>-<12 hex digits>. A claim renames the member, so a
// container with the podbot.pool label and another name is a claimed one.
const MemberPrefix = "podbot-pool-"

// memberIDPattern is the id part of a member's name.
var memberIDPattern = regexp.MustCompile(`^[0-9a-f]{12}$`)

// MemberName is the container name of member id of pool.
func MemberName(poolName, id string) string { return MemberPrefix + poolName + "-" + id }

// memberID returns the id part of a member's container name, or "" when
// name is not an unclaimed member of poolName.
func memberID(poolName, name string) string {
	id, ok := strings.CutPrefix(name, MemberPrefix+poolName+"-")
	if !ok || !memberIDPattern.MatchString(id) {
		return ""
	}
	return id
}

// Claim outcomes.
const (
	// ClaimWarm means a ready member was taken at once.
	ClaimWarm = "warm"
	// ClaimWaited means the pool was empty and a member came within the wait.
	ClaimWaited = "waited"
	// ClaimCold means the pool was empty and the sandbox was created cold
	// from the pool's template.
	ClaimCold = "cold"
)

// ClaimReport says how a claim from a pool went.
type ClaimReport struct {
	// Pool names the pool.
	Pool string `json:"pool"`
	// Outcome is ClaimWarm, ClaimWaited or ClaimCold.
	Outcome string `json:"outcome"`
	// Member is the pool member's name before the claim renamed it (empty
	// for a cold create).
	Member string `json:"member,omitempty"`
	// Name is the sandbox's container name (empty for a cold tool session,
	// whose container starts on the first call).
	Name string `json:"name,omitempty"`
	// Duration is how long the claim (or the wait before a cold create) took.
	Duration time.Duration `json:"duration_ns"`
	// Fallback, for a cold outcome after a member was taken, says why the
	// member could not be used (it was removed).
	Fallback string `json:"fallback,omitempty"`
}

// PoolOptions are the inputs of NewPoolBackend.
type PoolOptions struct {
	// Config is the loaded configuration; pool templates override it.
	Config config.Config
	// SidecarPath is the host's podbot-sidecar binary.
	SidecarPath string
	// WorkspaceRoot is where tools members get their directories (as
	// ToolSessionOptions.WorkspaceRoot); empty: tools.workspace_root, else
	// the default.
	WorkspaceRoot string
	// Environ is the host environment (as CreateOptions.Environ).
	Environ []string
	// RuntimeDir is $XDG_RUNTIME_DIR, where an allowlist agent member's
	// egress directory goes (as CreateOptions.RuntimeDir).
	RuntimeDir string
	// Logger receives diagnostics.
	Logger *slog.Logger
}

// PoolBackend is the container engine's pool.Backend. A ready member is a
// paused container named podbot-pool-<pool>-<id> with label
// podbot.pool=<pool>; Take unpauses it, which both Podman and Docker do for
// exactly one of any number of concurrent callers (a rename is not enough:
// both engines let several renames of one container succeed).
type PoolBackend struct {
	conn *engine.Conn
	opts PoolOptions
}

var _ pool.Backend = (*PoolBackend)(nil)

// NewPoolBackend returns the pool backend of conn.
func NewPoolBackend(conn *engine.Conn, opts PoolOptions) *PoolBackend {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &PoolBackend{conn: conn, opts: opts}
}

func (b *PoolBackend) workspaceRoot() string {
	return toolsFirstSet(b.opts.WorkspaceRoot, b.opts.Config.Tools.WorkspaceRoot)
}

// Members lists the pool's containers. A tools member whose directory is
// not where this process's workspace root puts it (another configuration
// made it) is left out: this process could not adopt it.
func (b *PoolBackend) Members(ctx context.Context, poolName string) ([]pool.Member, error) {
	if err := pool.ValidName(poolName); err != nil {
		return nil, err
	}
	rows, err := b.conn.List(ctx, map[string]string{launchplan.LabelManaged: "true", launchplan.LabelPool: poolName}, true, false)
	if err != nil {
		return nil, err
	}
	out := make([]pool.Member, 0, len(rows))
	for _, r := range rows {
		m := pool.Member{Pool: poolName, ID: r.ID, Name: r.Name, Created: r.Created, Dir: r.Labels[launchplan.LabelPoolDir]}
		id := memberID(poolName, r.Name)
		switch {
		case id == "":
			m.State = pool.StateClaimed
		case r.State == "paused":
			m.State = pool.StateReady
		case r.State == "running" || r.State == "created" || r.State == "configured" || r.State == "restarting" || r.State == "initialized":
			m.State = pool.StateStarting
		default:
			m.State = pool.StateFailed
		}
		if m.State == pool.StateReady && r.Labels[launchplan.LabelIntent] == string(launchplan.IntentTools) {
			if want, err := b.memberDir(poolName, id); err != nil || want != m.Dir {
				continue
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// memberDir is the checked host directory of tools member id.
func (b *PoolBackend) memberDir(poolName, id string) (string, error) {
	root := b.workspaceRoot()
	if root == "" {
		var err error
		if root, err = sandbox.DefaultWorkspaceRoot(); err != nil {
			return "", err
		}
	}
	return sandbox.MemberDir(root, poolName, id)
}

// Create makes one member of spec: created and started exactly as a
// sandbox of its kind from the pool's template, checked, then paused. A
// tools member is a tool session's first container (link directory and
// key included) whose sidecar answered the MCP handshake, released
// (sandbox.StartPoolMember) so that a claim adopts it.
func (b *PoolBackend) Create(ctx context.Context, spec pool.Spec) (pool.Member, error) {
	if err := spec.Check(); err != nil {
		return pool.Member{}, err
	}
	sid, err := newSessionID()
	if err != nil {
		return pool.Member{}, err
	}
	id := sid[:12]
	name := MemberName(spec.Name, id)
	labels := map[string]string{launchplan.LabelPool: spec.Name}
	m := pool.Member{Pool: spec.Name, Name: name, State: pool.StateReady, Created: time.Now()}
	switch spec.Kind {
	case pool.KindTools:
		topts := ToolSessionOptions{Config: b.opts.Config, SidecarPath: b.opts.SidecarPath, Pool: &spec}
		copts := containerOptions(b.conn, topts, sandbox.Options{ID: id, WorkspaceRoot: b.workspaceRoot(), Logger: b.opts.Logger})
		if copts.Network == ToolsNetworkAllowlist {
			return pool.Member{}, errToolsAllowlistPool(spec.Name)
		}
		r, err := sandbox.StartPoolMember(ctx, b.conn, copts, spec.Name, id, name, labels)
		if err != nil {
			return pool.Member{}, err
		}
		m.ID, m.Dir = r.ContainerID, r.SessionDir
		// The record lets claimers find the member without listing the
		// engine's containers; it is written before the pause, so a
		// claimer that reads it early gets only a failed unpause.
		if err := sandbox.RecordMember(m.Dir, m.ID); err != nil {
			cctx, cancel := engine.CleanupContext(ctx)
			defer cancel()
			return pool.Member{}, errors.Join(err, b.removeContainer(cctx, m))
		}
	case pool.KindAgent:
		copts, err := createOptionsFor(spec, b.opts.Config, b.opts.SidecarPath, b.opts.Environ)
		if err != nil {
			return pool.Member{}, err
		}
		copts.Name, copts.SessionID, copts.RuntimeDir = name, sid, b.opts.RuntimeDir
		// With a GitHub App, a member has the token directory a launch
		// that clones with the App mounts; a claim mints into it.
		copts.poolTokenDir = b.opts.RuntimeDir != "" && b.opts.Config.GitHub.Configured()
		res, err := create(ctx, b.conn, copts, labels)
		if err != nil {
			return pool.Member{}, err
		}
		m.ID = res.ID
	}
	if err := b.conn.API().ContainerPause(ctx, m.ID); err != nil {
		perr := engine.Classify("pause pool member", b.conn.Endpoint().String(), name, err)
		cctx, cancel := engine.CleanupContext(ctx)
		defer cancel()
		return pool.Member{}, errors.Join(perr, b.removeContainer(cctx, m))
	}
	return m, nil
}

// Scan names the tools members of poolName whose directories under this
// process's workspace root still hold a member record
// (sandbox.ScanMembers): no engine call. Members of other kinds, and tools
// members made without a record, are found by Members.
func (b *PoolBackend) Scan(_ context.Context, poolName string) ([]pool.Member, error) {
	if err := pool.ValidName(poolName); err != nil {
		return nil, err
	}
	found, err := sandbox.ScanMembers(b.workspaceRoot(), poolName)
	if err != nil {
		return nil, err
	}
	out := make([]pool.Member, 0, len(found))
	for _, f := range found {
		out = append(out, pool.Member{Pool: poolName, ID: f.ContainerID, Name: MemberName(poolName, f.MemberID), State: pool.StateReady, Dir: f.Dir})
	}
	return out, nil
}

// Take unpauses member m: the engine lets exactly one caller do that. The
// winner removes the member's record, so scans stop naming it; so does a
// caller that finds the member's container gone.
func (b *PoolBackend) Take(ctx context.Context, m pool.Member) error {
	err := b.conn.API().ContainerUnpause(ctx, m.ID)
	if err == nil {
		b.forget(m)
		return nil
	}
	if ctx.Err() != nil || client.IsErrConnectionFailed(err) {
		return engine.Classify("take pool member", b.conn.Endpoint().String(), m.Name, err)
	}
	cerr := engine.Classify("unpause", b.conn.Endpoint().String(), m.Name, err)
	if errors.Is(cerr, errdefs.ErrNotFound) {
		b.forget(m)
	}
	return fmt.Errorf("%w: %s: %v", pool.ErrTaken, m.Name, cerr)
}

// forget removes m's member record when m is a tools member whose
// directory has podbot's shape for it.
func (b *PoolBackend) forget(m pool.Member) {
	if m.Dir == "" || filepath.Base(m.Dir) != sandbox.MemberDirPrefix+m.Pool+"-"+memberID(m.Pool, m.Name) {
		return
	}
	if err := sandbox.ForgetMember(m.Dir); err != nil {
		b.opts.Logger.Warn("cannot remove a taken pool member's record", "member", m.Name, "error", err)
	}
}

// Remove takes a ready member (so no claimer gets it), then removes its
// container and directory. A member claimed meanwhile is left alone and
// the error matches pool.ErrTaken.
func (b *PoolBackend) Remove(ctx context.Context, m pool.Member) error {
	if m.State == pool.StateClaimed {
		return fmt.Errorf("%w: %s is claimed", pool.ErrTaken, m.Name)
	}
	if m.State == pool.StateReady {
		if err := b.Take(ctx, m); err != nil {
			return err
		}
	}
	return b.removeContainer(ctx, m)
}

// removeContainer force-removes m's container and, for a tools member, its
// directory when that is where podbot puts it; for an allowlist agent
// member, its egress proxy, network and directory.
func (b *PoolBackend) removeContainer(ctx context.Context, m pool.Member) error {
	var eg *egressSetup
	var labels map[string]string
	if in, err := b.conn.Inspect(ctx, m.ID, false); err == nil && in.Config != nil {
		labels = in.Config.Labels
		if labels[egressnet.LabelMode] == string(egress.ModeAllowlist) {
			if eg, err = claimedEgress(labels); err != nil {
				eg = &egressSetup{name: m.Name} // proxy and network by the member's name
			}
		}
	}
	err := b.conn.Remove(ctx, m.ID, true)
	if errors.Is(err, errdefs.ErrNotFound) {
		err = nil
	}
	return errors.Join(err, removeMemberDir(m), eg.teardown(ctx, b.conn), removeMemberToken(b.opts.RuntimeDir, labels))
}

// removeMemberDir removes a tools member's directory when its label names
// one of the shape podbot gives it (…/pool-<pool>-<id>, a real directory
// of this user) and the member's container name carries the same id.
func removeMemberDir(m pool.Member) error {
	if m.Dir == "" || !filepath.IsAbs(m.Dir) {
		return nil
	}
	id := memberID(m.Pool, m.Name)
	if id == "" || filepath.Base(m.Dir) != sandbox.MemberDirPrefix+m.Pool+"-"+id {
		return nil
	}
	dir, err := sandbox.MemberDir(filepath.Dir(m.Dir), m.Pool, id)
	if err != nil {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return &errdefs.FilesystemError{Op: "remove pool member directory", Path: dir, Err: err}
	}
	return nil
}

// rename gives a taken member the claimer's name. When the engine refuses
// (the name is in use), the member, still unused, is paused again and so
// goes back to the pool; if even that fails it is removed.
func (b *PoolBackend) rename(ctx context.Context, m pool.Member, name string) error {
	err := b.conn.API().ContainerRename(ctx, m.ID, name)
	if err == nil {
		return nil
	}
	rerr := engine.Classify("rename pool member", b.conn.Endpoint().String(), name, err)
	cctx, cancel := engine.CleanupContext(ctx)
	defer cancel()
	if perr := b.conn.API().ContainerPause(cctx, m.ID); perr != nil {
		return errors.Join(rerr, b.removeContainer(cctx, m))
	}
	return rerr
}

// applyToolsTemplate overrides the [tools] settings with a pool's template.
func applyToolsTemplate(t *config.Tools, spec pool.Spec) {
	if spec.Image != "" {
		t.Image = spec.Image
	}
	if spec.Network != "" {
		t.Network = spec.Network
	}
	if spec.MemoryBytes > 0 {
		t.Memory = config.ByteSize(spec.MemoryBytes)
	}
	if spec.NanoCPUs > 0 {
		t.CPUs = float64(spec.NanoCPUs) / 1e9
	}
	if spec.PidsLimit > 0 {
		t.PidsLimit = spec.PidsLimit
	}
	if spec.ReadOnlyRootfs != nil {
		t.ReadOnlyRootfs = *spec.ReadOnlyRootfs
	}
}

// createOptionsFor maps an agent pool's template to Create's options.
// An allowlist member gets its own egress proxy, internal network and
// egress directory, named after the member (egressnet.LabelName keeps
// that name through the claim's rename), with an empty policy that
// denies everything: nothing runs in a member before its claim, and the
// claim writes the claimer's policy (launchFromPool). [[secrets]] are
// refused: their credential vault (and the CA the sandbox trusts) is made
// with the sandbox.
func createOptionsFor(spec pool.Spec, cfg config.Config, sidecar string, environ []string) (CreateOptions, error) {
	switch spec.Network {
	case config.NetworkNone, config.NetworkOpen, config.NetworkAllowlist:
		cfg.Network.Mode = spec.Network
	case "":
		if cfg.Network.Mode == "" {
			cfg.Network.Mode = config.NetworkAllowlist
		}
	default:
		return CreateOptions{}, &errdefs.ConfigError{Key: "pool network", Reason: errdefs.ErrUnsupported,
			Msg: fmt.Sprintf("agent pool %s: network %q is not supported; use allowlist, none or open", spec.Name, spec.Network)}
	}
	if len(cfg.Secrets) > 0 {
		return CreateOptions{}, &errdefs.ConfigError{Key: config.SecretsKey, Reason: errdefs.ErrUnsupported,
			Msg: fmt.Sprintf("agent pool %s: [[secrets]] live in a credential vault whose CA the sandbox trusts from its creation, which a member made ahead cannot take; remove them for pooled sandboxes", spec.Name)}
	}
	out := CreateOptions{Config: cfg, Image: spec.Image, MemoryBytes: spec.MemoryBytes, NanoCPUs: spec.NanoCPUs,
		PidsLimit: spec.PidsLimit, ReadOnlyRootfs: spec.ReadOnlyRootfs, SidecarPath: sidecar, Environ: environ}
	switch egress.Mode(cfg.Network.Mode) {
	case egress.ModeNone:
		out.Network = config.NetworkNone
	case egress.ModeAllowlist:
		eg, err := EgressFromConfig(cfg, cfg.Agent.Kind)
		if err != nil {
			return CreateOptions{}, err
		}
		eg.Policy = egress.Policy{} // deny-all until a claim writes the claimer's
		out.Egress = &eg
	}
	return out, nil
}
