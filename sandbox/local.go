package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/tools"
)

// unsafePrefix starts every unsafe local session directory's name.
const unsafePrefix = "podbot-unsafe-"

// Local is the unsafe local backend: the tools on a temporary host
// directory, run as the calling user with no isolation, no resource
// limits and the host's network. Choose it only when the caller already
// runs inside a sandbox of its own (a CI job, a container); never on a
// shared host with untrusted input.
type Local struct {
	common
	lopts LocalOptions
	dir   string

	mu       sync.Mutex
	ws       *tools.Workspace
	closed   bool
	started  time.Time
	lastUsed time.Time
}

// NewUnsafeLocal creates an unsafe local session: a directory under
// opts.WorkspaceRoot (default os.TempDir()), hydrated from opts.Mounts.
func NewUnsafeLocal(ctx context.Context, opts LocalOptions) (*Local, error) {
	return newLocal(ctx, opts, "")
}

func newLocal(_ context.Context, opts LocalOptions, cloneFrom string) (*Local, error) {
	c, err := newCommon(BackendUnsafeLocal, opts.Options)
	if err != nil {
		return nil, err
	}
	root := opts.WorkspaceRoot
	if root == "" {
		root = os.TempDir()
	}
	dir, ws, err := makeSessionDir(root, unsafePrefix, c.id)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Local, error) {
		removeSessionDir(dir)
		return nil, err
	}
	if cloneFrom != "" {
		err = copyTree(cloneFrom, ws, maxCloneBytes)
	} else {
		err = hydrate(ws, opts.Mounts, opts.AllowedHostRoots)
	}
	if err != nil {
		return fail(err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fail(&errdefs.FilesystemError{Op: "create staging directory", Path: tmp, Err: err})
	}
	wopts := []tools.Option{tools.WithTempDir(tmp)}
	if opts.Env != nil {
		wopts = append(wopts, tools.WithEnv(opts.Env))
	}
	if opts.Python != "" {
		wopts = append(wopts, tools.WithPython(opts.Python))
	}
	w, err := tools.NewWorkspace(ws, wopts...)
	if err != nil {
		return fail(err)
	}
	l := &Local{common: c, lopts: opts, dir: dir, ws: w}
	l.started = l.now()
	l.lifecycle(EventCreated, "", 0)
	return l, nil
}

// Call runs a tool on the local workspace.
func (l *Local) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	start := l.now()
	args = l.withDefaults(name, normalizeArgs(args))
	out, err := l.call(ctx, name, args)
	l.mu.Lock()
	l.lastUsed = l.now()
	l.mu.Unlock()
	l.recordCall(name, args, out, "", start, err)
	return out, err
}

func (l *Local) call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	l.mu.Lock()
	ws, closed := l.ws, l.closed
	l.mu.Unlock()
	if closed {
		return nil, errClosed(l.id)
	}
	if name == tools.PodmanShellTool {
		return nil, &tools.ToolError{Tool: name, Reason: errdefs.ErrUnsupported,
			Msg: "podman_shell is offered by the container backend only; use shell_execute with an argv"}
	}
	res, err := ws.Call(ctx, name, args)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "encode tool result", Path: name, Err: err}
	}
	return out, nil
}

// Specs describes the tools (podman_shell is not among them).
func (l *Local) Specs() []tools.Spec { return tools.Specs() }

// Prompt is tools.UnsafePrompt.
func (l *Local) Prompt() string { return tools.UnsafePrompt() }

// Info reports the session's state.
func (l *Local) Info() Info {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Info{ID: l.id, Backend: BackendUnsafeLocal, WorkspaceDir: filepath.Join(l.dir, workspaceSubdir),
		StartedAt: l.started, LastUsedAt: l.lastUsed}
}

// Clone returns a new unsafe local session whose workspace is a copy of this one.
func (l *Local) Clone(ctx context.Context) (Session, error) {
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return nil, errClosed(l.id)
	}
	opts := l.lopts
	opts.ID = ""
	return newLocal(ctx, opts, filepath.Join(l.dir, workspaceSubdir))
}

// Close removes the workspace directory.
func (l *Local) Close(context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	ws := l.ws
	l.mu.Unlock()
	err := ws.Close()
	if rerr := removeSessionDir(l.dir); rerr != nil {
		err = rerr
	}
	l.lifecycle(EventClosed, "", 0)
	return err
}
