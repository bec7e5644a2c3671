package sandbox

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

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

// maxCloneDepth bounds the directory nesting copyTree follows.
const maxCloneDepth = 256

// copyTree copies the regular files, directories and symlinks (as links,
// never followed) of src into dst, which must exist, within maxBytes.
//
// src is a workspace a sandboxed agent may be changing while it is
// copied, so the copy never resolves a path below src by name: it walks
// by directory handles (os.Root), one name at a time, and takes every
// entry's type from the descriptor it opened. A directory swapped for a
// symlink between the look and the open is either refused by the handle
// (it leads out of the directory) or detected as another file and
// skipped; a file swapped for a symlink is not opened (O_NOFOLLOW); a FIFO
// or device is not waited on (O_NONBLOCK) and not copied.
func copyTree(src, dst string, maxBytes int64) error {
	return copyTreeHooked(src, dst, maxBytes, nil)
}

// copyTreeHooked is copyTree with a hook called with each entry's path
// (relative to src) between looking at it and opening it; tests use it to
// change the tree at the worst moment.
func copyTreeHooked(src, dst string, maxBytes int64, beforeOpen func(rel string)) error {
	sroot, err := os.OpenRoot(src)
	if err != nil {
		return &errdefs.FilesystemError{Op: "copy workspace", Path: src, Err: err}
	}
	defer sroot.Close()
	droot, err := os.OpenRoot(dst)
	if err != nil {
		return &errdefs.FilesystemError{Op: "copy workspace", Path: dst, Err: err}
	}
	defer droot.Close()
	c := &treeCopier{src: src, max: maxBytes, beforeOpen: beforeOpen}
	return c.copyDir(sroot, droot, "", 0)
}

// treeCopier carries copyTree's byte budget across directories.
type treeCopier struct {
	src        string
	max, total int64
	beforeOpen func(rel string)
}

func (c *treeCopier) fail(rel string, err error) error {
	return &errdefs.FilesystemError{Op: "copy workspace", Path: filepath.Join(c.src, filepath.FromSlash(rel)), Err: err}
}

// copyDir copies the entries of the directory s into d; rel is s's path
// relative to the copy's source, for errors.
func (c *treeCopier) copyDir(s, d *os.Root, rel string, depth int) error {
	if depth > maxCloneDepth {
		return &errdefs.FilesystemError{Op: "copy workspace", Path: filepath.Join(c.src, filepath.FromSlash(rel)), Reason: errdefs.ErrInvalidValue,
			Msg: "the workspace is nested deeper than " + strconv.Itoa(maxCloneDepth) + " directories"}
	}
	dir, err := s.Open(".")
	if err != nil {
		return c.fail(rel, err)
	}
	entries, err := dir.ReadDir(-1)
	dir.Close()
	if err != nil {
		return c.fail(rel, err)
	}
	for _, e := range entries {
		name := e.Name()
		erel := path.Join(rel, name)
		info, err := s.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return c.fail(erel, err)
		}
		if c.beforeOpen != nil {
			c.beforeOpen(erel)
		}
		switch {
		case info.IsDir():
			if err := c.copySubdir(s, d, name, erel, info, depth); err != nil {
				return err
			}
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := s.Readlink(name)
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EINVAL) {
				continue // removed or no longer a symlink
			}
			if err == nil {
				err = d.Symlink(link, name)
			}
			if err != nil {
				return c.fail(erel, err)
			}
		case info.Mode().IsRegular():
			if err := c.copyFile(s, d, name, erel); err != nil {
				return err
			}
		}
	}
	return nil
}

// copySubdir opens the directory name of s through its handle and copies
// it, unless it is no longer the directory that was looked at.
func (c *treeCopier) copySubdir(s, d *os.Root, name, rel string, looked fs.FileInfo, depth int) error {
	sub, err := s.OpenRoot(name)
	if err != nil {
		// Gone, no longer a directory, or a symlink leading out of s:
		// whatever it became, nothing outside is copied.
		return nil
	}
	defer sub.Close()
	if opened, err := sub.Stat("."); err != nil || !os.SameFile(looked, opened) {
		return nil // swapped for another directory (a symlink within s): not followed
	}
	if err := d.Mkdir(name, 0o700); err != nil {
		return c.fail(rel, err)
	}
	dsub, err := d.OpenRoot(name)
	if err != nil {
		return c.fail(rel, err)
	}
	defer dsub.Close()
	return c.copyDir(sub, dsub, rel, depth+1)
}

// copyFile copies one regular file, typed by its opened descriptor.
func (c *treeCopier) copyFile(s, d *os.Root, name, rel string) error {
	in, err := s.OpenFile(name, os.O_RDONLY|noFollow|openNoWait, 0)
	if err != nil {
		return nil // gone, or swapped for a symlink: not followed
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return c.fail(rel, err)
	}
	if !st.Mode().IsRegular() {
		return nil // swapped for a FIFO, device or directory
	}
	c.total += st.Size()
	if c.total > c.max {
		return &errdefs.FilesystemError{Op: "copy workspace", Path: filepath.Join(c.src, filepath.FromSlash(rel)), Reason: errdefs.ErrInvalidValue,
			Msg: "the workspace is larger than " + strconv.FormatInt(c.max, 10) + " bytes; remove large files before cloning"}
	}
	out, err := d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm()|0o600)
	if err != nil {
		return c.fail(rel, err)
	}
	// A file growing while it is copied takes no more than the budget left.
	n, err := copyLimited(out, in, c.max-c.total+st.Size())
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return c.fail(rel, err)
	}
	c.total += n - st.Size()
	return nil
}

// copyLimited copies at most limit bytes from r to w.
func copyLimited(w io.Writer, r io.Reader, limit int64) (int64, error) {
	return io.Copy(w, io.LimitReader(r, limit))
}
