package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/sidecarsock"
)

// Running is a running tool-session container handed from one holder to
// the next (Release, then AdoptContainer), possibly in another process:
// the container and the session directory that holds its workspace and
// link directory. It holds no secret: the link key stays in the session
// directory, which only podbot's user can read.
type Running struct {
	// ContainerID and ContainerName name the container.
	ContainerID   string `json:"container_id"`
	ContainerName string `json:"container_name"`
	// SessionDir is the session's directory (SessionDir()).
	SessionDir string `json:"session_dir"`
	// StartedAt is when the container started.
	StartedAt time.Time `json:"started_at"`
	// CPUSet lists the CPUs it is pinned to, or "".
	CPUSet string `json:"cpuset,omitempty"`
}

// SessionDir is the session's host directory: the workspace and, when the
// session has one, the link directory and podbot's copy of its key.
func (s *Container) SessionDir() string { return s.dir }

// Release hands the session's running container over: it closes the
// connection to the sidecar and stops the session's timers, leaves the
// container and the session directory in place, and returns what
// AdoptContainer needs. The session is closed afterwards (Close then
// removes nothing). With no container running, or a sandbox that holds
// its own workspace (NewRemoteContainer), it returns false.
func (s *Container) Release() (Running, bool) {
	s.awaitRename(context.Background())
	s.life.Lock()
	defer s.life.Unlock()
	lc := s.cur
	if s.closed || lc == nil || s.remote {
		return Running{}, false
	}
	_ = s.dropLocked(context.Background(), false)
	s.closed = true
	return Running{ContainerID: lc.id, ContainerName: lc.name, SessionDir: s.dir, StartedAt: lc.startedAt, CPUSet: lc.cpus}, true
}

// AdoptContainer returns a session for a running container that another
// session released, with opts as that session had them (opts.ID and
// opts.WorkspaceRoot are taken from r; for a pool member's directory,
// which names no session, opts.ID must be set and is kept). Nothing is created and no exec
// is made: the first call connects to the sidecar over the link socket
// when the container has one (else over an exec, as a reconnect does);
// a container that no longer runs is replaced by a new one on the same
// workspace. Close removes the container and the session directory.
func AdoptContainer(ctx context.Context, conn *engine.Conn, opts ContainerOptions, r Running) (*Container, error) {
	rt, err := newEngineRuntime(conn, opts)
	if err != nil {
		return nil, err
	}
	return adoptContainer(ctx, rt, opts, r)
}

func adoptContainer(_ context.Context, rt runtime, opts ContainerOptions, r Running) (*Container, error) {
	dir := filepath.Clean(r.SessionDir)
	id, ok := adoptedSessionID(filepath.Base(dir), opts.ID)
	if !filepath.IsAbs(r.SessionDir) || !ok || r.ContainerID == "" {
		return nil, &errdefs.ConfigError{Key: "session_dir", Reason: errdefs.ErrInvalidValue,
			Msg: "a released container needs its container id and an absolute session directory named " + sessionPrefix +
				"<id> (or a pool member's, " + MemberDirPrefix + "<pool>-<member id>, with the session id given)"}
	}
	// Close removes the whole directory: it must be one podbot made.
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 || !ownedByMe(fi) {
		return nil, &errdefs.FilesystemError{Op: "adopt session", Path: dir, Reason: errdefs.ErrRefused,
			Msg: "a released session's directory must be a real directory of this user, mode 0700", Err: err}
	}
	ws := filepath.Join(dir, workspaceSubdir)
	if fi, err := os.Lstat(ws); err != nil || !fi.IsDir() {
		return nil, &errdefs.FilesystemError{Op: "adopt session", Path: ws, Reason: errdefs.ErrNotFound,
			Msg: "the released session's workspace is missing", Err: err}
	}
	opts.ID, opts.WorkspaceRoot = id, filepath.Dir(dir)
	c, err := newCommon(BackendContainer, opts.Options)
	if err != nil {
		return nil, err
	}
	s := &Container{common: c, copts: opts, rt: rt, dir: dir, ws: ws, shared: true}
	s.generation = generationOf(r.ContainerName)
	if opts.SidecarLink != SidecarLinkExec {
		if uid, _, ok := rt.linkOwner(); ok {
			if canon, err := filepath.EvalSymlinks(dir); err == nil {
				key, err := sidecarsock.LoadKey(canon)
				if err == nil {
					s.link = &sessionLink{dir: filepath.Join(canon, sidecarsock.LinkDirName), owner: uid, key: key}
				} else if !errors.Is(err, errdefs.ErrNotFound) {
					s.logger.Warn("cannot read the released session's link key; using an exec stream", "session", id, "error", err)
				}
			}
		}
	}
	lc := &live{id: r.ContainerID, name: r.ContainerName, cpus: r.CPUSet, startedAt: r.StartedAt}
	lc.detached.Store(true)
	s.cur = lc
	return s, nil
}

// memberDirPattern is the name of a pool member's directory (see
// StartPoolMember).
var memberDirPattern = regexp.MustCompile(`^` + MemberDirPrefix + `[a-z0-9][a-z0-9-]*-[0-9a-f]{12}$`)

// adoptedSessionID is the id of the session whose directory is named
// base: <id> of session-<id>, or given (when set) for a pool member's
// directory.
func adoptedSessionID(base, given string) (string, bool) {
	if id, ok := strings.CutPrefix(base, sessionPrefix); ok {
		return id, true
	}
	return given, given != "" && memberDirPattern.MatchString(base)
}

// generationOf reads the generation from a container name
// podbot-tools-<id>-<n>, so a replacement gets a name of its own.
func generationOf(name string) int {
	i := strings.LastIndexByte(name, '-')
	if n, err := strconv.Atoi(name[i+1:]); err == nil && n >= 0 && n < 1<<20 {
		return n
	}
	return 1 << 20
}
