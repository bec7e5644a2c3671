package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// MemberDirPrefix starts the name of a tools pool member's host directory
// under the workspace root: pool-<pool>-<member id>.
const MemberDirPrefix = "pool-"

// memberStart is what a pool member's container gets besides a session's
// plan: its own name and podbot's pool labels.
type memberStart struct {
	name   string
	labels map[string]string
}

// StartPoolMember makes one tools pool member named name: an ordinary
// tool session of opts (no mounts) whose first container starts now, with
// exactly a session's plan, link directory and key, plus labels (podbot's
// own pool labels), its session directory <workspace root>/pool-<pool>-
// <memberID> with an empty workspace. Once the sidecar has answered the
// MCP handshake, the session is released (Container.Release): the
// connection closes, the container keeps running, and a claim adopts it
// (ClaimPoolMember). On failure the container and directory are removed.
func StartPoolMember(ctx context.Context, conn *engine.Conn, opts ContainerOptions, pool, memberID, name string, labels map[string]string) (Running, error) {
	rt, err := newEngineRuntime(conn, opts)
	if err != nil {
		return Running{}, err
	}
	return startPoolMember(ctx, rt, opts, pool, memberID, name, labels)
}

func startPoolMember(ctx context.Context, rt runtime, opts ContainerOptions, pool, memberID, name string, labels map[string]string) (Running, error) {
	if err := checkMemberNames(pool, memberID); err != nil {
		return Running{}, err
	}
	opts.ID, opts.Mounts = memberID, nil
	s, err := newContainer(ctx, rt, opts, MemberDirPrefix+pool+"-", "")
	if err != nil {
		return Running{}, err
	}
	all := map[string]string{launchplan.LabelPoolDir: s.dir}
	for k, v := range labels {
		all[k] = v
	}
	s.life.Lock()
	s.member = &memberStart{name: name, labels: all}
	err = s.startLocked(ctx, false)
	s.member = nil
	s.life.Unlock()
	if err != nil {
		cctx, cancel := engine.CleanupContext(ctx)
		defer cancel()
		return Running{}, errors.Join(err, s.Close(cctx))
	}
	r, _ := s.Release()
	return r, nil
}

// checkMemberNames refuses a pool or member name that could leave the
// workspace root in a directory name.
func checkMemberNames(pool, memberID string) error {
	if strings.ContainsAny(pool+memberID, "/\\.") || pool == "" || memberID == "" {
		return &errdefs.FilesystemError{Op: "check pool member directory", Path: pool + "-" + memberID, Reason: errdefs.ErrInvalidValue,
			Msg: "a pool or member name may not be empty or contain path separators or dots"}
	}
	return nil
}

// MemberDir returns the host directory a tools member of pool with member
// id memberID has under root, and checks that it is podbot's: a real
// directory (not a link) of this user, closed to others, with a real
// workspace directory inside.
func MemberDir(root, pool, memberID string) (string, error) {
	if root == "" {
		var err error
		if root, err = DefaultWorkspaceRoot(); err != nil {
			return "", err
		}
	}
	if err := checkMemberNames(pool, memberID); err != nil {
		return "", err
	}
	dir := filepath.Join(root, MemberDirPrefix+pool+"-"+memberID)
	for _, p := range []string{dir, filepath.Join(dir, workspaceSubdir)} {
		st, err := os.Lstat(p)
		if err != nil {
			return "", &errdefs.FilesystemError{Op: "check pool member directory", Path: p, Reason: errdefs.ErrNotFound, Err: err}
		}
		// The workspace itself belongs to the container user (shareWith).
		if !st.IsDir() || (p == dir && (st.Mode().Perm()&0o077 != 0 || !ownedByMe(st))) {
			return "", &errdefs.FilesystemError{Op: "check pool member directory", Path: p, Reason: errdefs.ErrPermissionDenied,
				Msg: "a pool member's directory must be a directory of this user, closed to others, not a link"}
		}
	}
	return dir, nil
}

// ClaimPoolMember opens a tool session on a pool member the caller has
// taken: r is the member as StartPoolMember released it, named (or being
// renamed) ContainerName(opts.ID, 1). The session adopts it as
// AdoptContainer does, with session id opts.ID; the member's empty
// workspace is hydrated from opts.Mounts; then the session connects to
// the sidecar at once, over the member's link socket when it has one (no
// exec), else over an exec. Its uptime counts from the claim. From then
// on it is an ordinary session (idle cleanup, recreation after a crash,
// Close removing container and directory). On failure the container is
// removed, and the directory with it once it passed adoption's checks.
func ClaimPoolMember(ctx context.Context, conn *engine.Conn, opts ContainerOptions, r Running) (*Container, error) {
	rt, err := newEngineRuntime(conn, opts)
	if err != nil {
		return nil, err
	}
	return claimPoolMember(ctx, rt, opts, r)
}

func claimPoolMember(ctx context.Context, rt runtime, opts ContainerOptions, r Running) (_ *Container, err error) {
	if opts.ID == "" {
		return nil, &errdefs.ConfigError{Key: "tools.session", Reason: errdefs.ErrMissingRequired,
			Msg: "a claim from a pool names the session it opens"}
	}
	s, err := adoptContainer(ctx, rt, opts, r)
	if err != nil {
		cctx, cancel := engine.CleanupContext(ctx)
		defer cancel()
		return nil, errors.Join(err, rt.remove(cctx, r.ContainerID, r.ContainerName))
	}
	defer func() {
		if err != nil {
			cctx, cancel := engine.CleanupContext(ctx)
			defer cancel()
			err = errors.Join(err, s.Close(cctx))
		}
	}()
	t0 := s.now()
	if err := hydrate(s.ws, opts.Mounts, opts.AllowedHostRoots); err != nil {
		return nil, err
	}
	s.life.Lock()
	defer s.life.Unlock()
	s.shared = len(opts.Mounts) == 0 // a hydrated tree is opened to the container user again
	if err := s.shareLocked(); err != nil {
		return nil, err
	}
	member := s.cur
	member.startedAt = s.now()
	s.cur = nil
	if err := s.connectLocked(ctx, ctx, member); err != nil {
		s.cur = member // Close removes it
		return nil, err
	}
	s.lifecycle(EventClaimed, member.name, s.now().Sub(t0))
	return s, nil
}

// SettleRename gives the session the outcome of renaming its container (a
// pool member it claimed) to its own name, a rename still in flight when
// ClaimPoolMember returned: the session works at once, and its calls,
// which reach the container by id and over the socket, do not wait for
// the name. done delivers the rename's error once. Until then the member
// keeps its pool name (the refiller and prune leave a running member alone
// for minutes). When the rename fails, the container, which would stay a
// pool member by name, is removed and the session's next call starts a
// container of its own, as after a crash; the failure is logged. Close and
// Release wait for the rename to settle.
func (s *Container) SettleRename(ctx context.Context, done <-chan error) {
	ctx = context.WithoutCancel(ctx) // the removal after a failed rename outlives the claim
	settled := make(chan struct{})
	s.life.Lock()
	var id, name string
	if s.cur != nil {
		id, name = s.cur.id, s.cur.name
	}
	s.renaming = settled
	s.life.Unlock()
	go func() {
		defer close(settled)
		err := <-done
		if err == nil {
			return
		}
		s.life.Lock()
		defer s.life.Unlock()
		if s.closed || s.cur == nil || s.cur.id != id {
			return
		}
		s.logger.Warn("a claimed pool member could not take the session's name; replacing it with a container of the session's own",
			"session", s.id, "container", name, "error", err)
		if rerr := s.dropLocked(ctx, true); rerr != nil {
			s.logger.Warn("cannot remove the claimed pool member", "container", name, "error", rerr)
		}
	}()
}

// awaitRename waits until a pending rename (SettleRename) has settled, or
// ctx ends.
func (s *Container) awaitRename(ctx context.Context) {
	s.life.Lock()
	ch := s.renaming
	s.life.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}
