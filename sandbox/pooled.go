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

// PoolMember is a tool-session container made ahead of a claim: running,
// its sidecar answered the MCP handshake once, its /workspace an empty
// host directory.
type PoolMember struct {
	// ID and Name identify the container.
	ID, Name string
	// Dir is the member's host directory; Dir/workspace is its /workspace.
	Dir string
}

// StartPoolMember creates and starts one tools pool member named name,
// with exactly the plan a tool session of opts gets, plus labels (podbot's
// own pool labels), its workspace an empty directory
// <workspace root>/pool-<pool>-<memberID>. It checks that the sidecar
// answers the MCP handshake, then closes that stream. On failure the
// container and directory are removed.
func StartPoolMember(ctx context.Context, conn *engine.Conn, opts ContainerOptions, pool, memberID, name string, labels map[string]string) (m PoolMember, err error) {
	rt, err := newEngineRuntime(conn, opts)
	if err != nil {
		return m, err
	}
	root := opts.WorkspaceRoot
	if root == "" {
		if root, err = DefaultWorkspaceRoot(); err != nil {
			return m, err
		}
	}
	dir, ws, err := makeSessionDir(root, MemberDirPrefix+pool+"-", memberID)
	if err != nil {
		return m, err
	}
	defer func() {
		if err != nil {
			removeSessionDir(dir)
		}
	}()
	if err := shareWith(ws, rt.user); err != nil {
		return m, err
	}
	all := map[string]string{launchplan.LabelPoolDir: dir}
	for k, v := range labels {
		all[k] = v
	}
	sc, err := rt.start(ctx, containerSpec{sessionID: memberID, name: name, workspaceDir: ws, labels: all})
	if err != nil {
		return m, err
	}
	defer func() {
		if err != nil {
			cctx, cancel := engine.CleanupContext(ctx)
			defer cancel()
			err = errors.Join(err, rt.remove(cctx, sc.id))
		}
	}()
	st, err := rt.attach(ctx, sc.id)
	if err != nil {
		return m, err
	}
	cs, err := connectSidecar(ctx, st, opts.Version, sc.name)
	if err != nil {
		return m, err
	}
	cs.Close()
	st.Close()
	return PoolMember{ID: sc.id, Name: sc.name, Dir: dir}, nil
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
	if strings.ContainsAny(pool+memberID, "/\\.") || pool == "" || memberID == "" {
		return "", &errdefs.FilesystemError{Op: "check pool member directory", Path: root, Reason: errdefs.ErrInvalidValue,
			Msg: "a pool or member name may not contain path separators or dots"}
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
// taken and renamed to ContainerName(opts.ID, 1). The member's empty
// workspace becomes the session's: it is hydrated from opts.Mounts, and
// the session connects to the sidecar the way a new session does. From
// then on the session is an ordinary one (idle cleanup, recreation after
// a crash, Close removing container and directory). On failure the
// container and directory are removed.
func ClaimPoolMember(ctx context.Context, conn *engine.Conn, opts ContainerOptions, m PoolMember) (_ *Container, err error) {
	rt, err := newEngineRuntime(conn, opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cctx, cancel := engine.CleanupContext(ctx)
			defer cancel()
			err = errors.Join(err, rt.remove(cctx, m.ID), removeSessionDir(m.Dir))
		}
	}()
	c, err := newCommon(BackendContainer, opts.Options)
	if err != nil {
		return nil, err
	}
	ws := filepath.Join(m.Dir, workspaceSubdir)
	if err := hydrate(ws, opts.Mounts, opts.AllowedHostRoots); err != nil {
		return nil, err
	}
	s := &Container{common: c, copts: opts, rt: rt, dir: m.Dir, ws: ws, generation: 1}
	t0 := s.now()
	if err := shareWith(ws, rt.user); err != nil {
		return nil, err
	}
	s.shared = true
	st, err := rt.attach(ctx, m.ID)
	if err != nil {
		return nil, err
	}
	cs, err := connectSidecar(ctx, st, opts.Version, m.Name)
	if err != nil {
		return nil, err
	}
	s.life.Lock()
	defer s.life.Unlock()
	s.cur = &live{id: m.ID, name: m.Name, st: st, cs: cs, startedAt: s.now()}
	s.armTimersLocked(s.cur)
	s.lifecycle(EventClaimed, m.Name, s.now().Sub(t0))
	return s, nil
}
