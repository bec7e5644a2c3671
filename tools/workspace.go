package tools

import (
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/podbot/podbot/errdefs"
)

// Workspace runs the tools over one directory, the logical /workspace.
// Its methods are safe for concurrent use. Close releases the directory
// handle; it does not remove the directory.
type Workspace struct {
	dir       string
	root      *os.Root
	env       []string
	tmpDir    string
	python    string
	escapeErr error

	paths pathCache // bare command names resolved against PATH

	nullOnce sync.Once // opens null on first use
	null     *os.File  // /dev/null, shared by every command's unused stdio
	nullErr  error

	trackOnce     sync.Once     // starts tracker on the first shell_execute
	tracker       changeTracker // nil: changed_files compares snapshots
	snapshotsOnly bool          // never start a tracker (tests compare both ways)
}

type workspaceConfig struct {
	env           []string
	tmpDir        string
	python        string
	snapshotsOnly bool
}

// Option configures a Workspace.
type Option func(*workspaceConfig) error

// WithEnv sets the base environment ("KEY=value" entries) every command
// starts from; shell_execute env overrides are applied on top. Without it a
// minimal environment is used (PATH, HOME set to the workspace, LANG), so
// nothing from the calling process leaks into commands.
func WithEnv(env []string) Option {
	return func(c *workspaceConfig) error {
		c.env = append([]string(nil), env...)
		return nil
	}
}

// WithTempDir sets where evaluate_python stages its writes. It must be
// writable and outside the workspace. The default is os.TempDir().
func WithTempDir(dir string) Option {
	return func(c *workspaceConfig) error {
		if !filepath.IsAbs(dir) {
			return &errdefs.FilesystemError{Op: "temp dir", Path: dir, Reason: errdefs.ErrInvalidValue, Msg: "must be an absolute path"}
		}
		c.tmpDir = dir
		return nil
	}
}

// WithPython sets the Python interpreter evaluate_python runs (default
// "python3", looked up in the command PATH).
func WithPython(path string) Option {
	return func(c *workspaceConfig) error {
		if path == "" {
			return &errdefs.FilesystemError{Op: "python", Path: path, Reason: errdefs.ErrInvalidValue, Msg: "interpreter path is empty"}
		}
		c.python = path
		return nil
	}
}

// NewWorkspace opens dir (which must exist and be a directory) as the root
// of a Workspace.
func NewWorkspace(dir string, opts ...Option) (*Workspace, error) {
	cfg := workspaceConfig{tmpDir: os.TempDir(), python: "python3"}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "open workspace", Path: dir, Err: err}
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "open workspace", Path: abs, Reason: errdefs.ErrNotFound, Msg: "workspace directory must exist", Err: err}
	}
	if !st.IsDir() {
		return nil, &errdefs.FilesystemError{Op: "open workspace", Path: abs, Reason: errdefs.ErrInvalidValue, Msg: "workspace must be a directory"}
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "open workspace", Path: abs, Err: err}
	}
	if cfg.env == nil {
		cfg.env = defaultEnv(abs)
	}
	w := &Workspace{dir: abs, root: root, env: cfg.env, tmpDir: cfg.tmpDir, python: cfg.python, snapshotsOnly: cfg.snapshotsOnly}
	// os.Root reports escapes with an unexported sentinel; learn it once so
	// escapes can be told apart from other failures with errors.Is.
	if _, err := root.Lstat(".."); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			w.escapeErr = pe.Err
		}
	}
	return w, nil
}

// Dir returns the absolute host path of the workspace root.
func (w *Workspace) Dir() string { return w.dir }

// Close releases the workspace root handle.
func (w *Workspace) Close() error {
	w.nullOnce.Do(func() {}) // no command opens it from now on
	if w.null != nil {
		w.null.Close()
	}
	w.trackOnce.Do(func() {}) // and no command starts a tracker
	if w.tracker != nil {
		w.tracker.close()
	}
	if err := w.root.Close(); err != nil {
		return &errdefs.FilesystemError{Op: "close workspace", Path: w.dir, Err: err}
	}
	return nil
}

func defaultEnv(dir string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	return []string{"PATH=" + path, "HOME=" + dir, "LANG=C.UTF-8"}
}
