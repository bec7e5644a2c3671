package sandbox

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/workspace"
)

// workspaceSubdir is the directory inside a session directory that
// becomes /workspace.
const workspaceSubdir = "workspace"

// maxCloneBytes bounds what Clone copies.
const maxCloneBytes = 4 << 30

// DefaultWorkspaceRoot is where container sessions keep their workspaces
// when no root is configured: <user cache dir>/podbot/tools, else the
// private per-user directory workspace.PrivateTempDir("podbot-tools"),
// which is refused when another user could have made or may write it.
func DefaultWorkspaceRoot() (string, error) {
	if d, err := os.UserCacheDir(); err == nil && filepath.IsAbs(d) {
		return filepath.Join(d, "podbot", "tools"), nil
	}
	return workspace.PrivateTempDir("podbot-tools")
}

// makeSessionDir creates root/<prefix><id> (0700) and its workspace
// subdirectory, and returns both paths.
func makeSessionDir(root, prefix, id string) (dir, ws string, err error) {
	if root == "" || !filepath.IsAbs(root) {
		return "", "", &errdefs.ConfigError{Key: "tools.workspace_root", Reason: errdefs.ErrInvalidValue,
			Msg: "workspace root " + strconv.Quote(root) + " must be an absolute host path"}
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", "", &errdefs.FilesystemError{Op: "create workspace root", Path: root, Err: err}
	}
	dir = filepath.Join(root, prefix+id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		reason := error(nil)
		if errors.Is(err, fs.ErrExist) {
			reason = errdefs.ErrAlreadyExists
		}
		return "", "", &errdefs.FilesystemError{Op: "create session directory", Path: dir, Reason: reason,
			Msg: "each session needs a directory of its own; pick another session id", Err: err}
	}
	ws = filepath.Join(dir, workspaceSubdir)
	if err := os.Mkdir(ws, 0o700); err != nil {
		os.RemoveAll(dir)
		return "", "", &errdefs.FilesystemError{Op: "create workspace", Path: ws, Err: err}
	}
	return dir, ws, nil
}

// removeSessionDir removes a session directory and everything in it.
func removeSessionDir(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return &errdefs.FilesystemError{Op: "remove session directory", Path: dir, Err: err}
	}
	return nil
}

// shareWith makes the workspace tree usable by the container user: owned
// by uid:gid when this process may chown (running as root), otherwise
// world-writable, so an unprivileged container user can write to it.
func shareWith(ws, user string) error {
	uid, gid, numeric := parseNumericUser(user)
	chown := numeric && os.Geteuid() == 0
	return filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if chown {
				return os.Lchown(p, uid, gid)
			}
			return nil
		}
		if chown {
			if err := os.Chown(p, uid, gid); err != nil {
				return &errdefs.FilesystemError{Op: "chown workspace", Path: p, Err: err}
			}
			mode := fs.FileMode(0o644)
			if d.IsDir() {
				mode = 0o755
			}
			if info, err := d.Info(); err == nil && info.Mode()&0o100 != 0 {
				mode |= 0o111
			}
			return os.Chmod(p, mode)
		}
		mode := fs.FileMode(0o666)
		if d.IsDir() {
			mode = 0o777
		} else if info, err := d.Info(); err == nil && info.Mode()&0o100 != 0 {
			mode = 0o777
		}
		if err := os.Chmod(p, mode); err != nil {
			return &errdefs.FilesystemError{Op: "open workspace to the container user", Path: p, Err: err}
		}
		return nil
	})
}

// parseNumericUser parses "uid" or "uid:gid".
func parseNumericUser(user string) (uid, gid int, ok bool) {
	if user == "" {
		return 0, 0, false
	}
	u, g, hasGroup := strings.Cut(user, ":")
	uid, err := strconv.Atoi(u)
	if err != nil || uid < 0 {
		return 0, 0, false
	}
	gid = uid
	if hasGroup {
		if gid, err = strconv.Atoi(g); err != nil || gid < 0 {
			return 0, 0, false
		}
	}
	return uid, gid, true
}

// copyTree copies the regular files, directories and symlinks (as links,
// never followed) of src into dst, which must exist, within maxBytes.
func copyTree(src, dst string, maxBytes int64) error {
	var total int64
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return &errdefs.FilesystemError{Op: "copy workspace", Path: p, Err: err}
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return &errdefs.FilesystemError{Op: "copy workspace", Path: p, Err: err}
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(target, 0o700); err != nil {
				return &errdefs.FilesystemError{Op: "copy workspace", Path: target, Err: err}
			}
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err == nil {
				err = os.Symlink(link, target)
			}
			if err != nil {
				return &errdefs.FilesystemError{Op: "copy workspace", Path: target, Err: err}
			}
		case d.Type().IsRegular():
			total += info.Size()
			if total > maxBytes {
				return &errdefs.FilesystemError{Op: "copy workspace", Path: p, Reason: errdefs.ErrInvalidValue,
					Msg: "the workspace is larger than " + strconv.FormatInt(maxBytes, 10) + " bytes; remove large files before cloning"}
			}
			if err := copyFile(p, target, info.Mode().Perm()); err != nil {
				return err
			}
		}
		return nil
	})
}

// copyFile copies one regular file without following a symlink at src.
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.OpenFile(src, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return &errdefs.FilesystemError{Op: "read", Path: src, Err: err}
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm|0o600)
	if err != nil {
		return &errdefs.FilesystemError{Op: "write", Path: dst, Err: err}
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return &errdefs.FilesystemError{Op: "copy", Path: dst, Err: err}
	}
	if err := out.Close(); err != nil {
		return &errdefs.FilesystemError{Op: "write", Path: dst, Err: err}
	}
	return nil
}

// copyLimited copies at most limit bytes from r to w.
func copyLimited(w io.Writer, r io.Reader, limit int64) (int64, error) {
	return io.Copy(w, io.LimitReader(r, limit))
}
