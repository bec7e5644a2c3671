package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/tools"
)

// DefaultMountMaxBytes is a host mount's byte budget when none is given.
const DefaultMountMaxBytes = 64 << 20

// HostMount copies host files into a new workspace before its first use.
// The copy is made once: a recreated container finds the files (and the
// edits made to them) already there.
type HostMount struct {
	// HostPath is the file or directory to copy. It must lie (after
	// resolving symlinks) inside one of the allowed host roots.
	HostPath string `json:"host_path"`
	// MountPath is where the copy lands, relative to /workspace; empty
	// selects the base name of HostPath.
	MountPath string `json:"mount_path,omitempty"`
	// IncludeGlob, when set, copies only files whose relative path or base
	// name matches one of these globs (path.Match syntax).
	IncludeGlob []string `json:"include_glob,omitempty"`
	// ExcludeGlob skips files and directories matching one of these globs.
	ExcludeGlob []string `json:"exclude_glob,omitempty"`
	// MaxBytes bounds the bytes copied; 0 selects DefaultMountMaxBytes.
	// Exceeding it fails the session's setup.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// FollowSymlinks copies what a symlink points to (which must also lie
	// inside an allowed root); otherwise symlinks are skipped.
	FollowSymlinks bool `json:"follow_symlinks,omitempty"`
}

// mountError is a refused host mount.
func mountError(m HostMount, reason error, msg string) error {
	return &errdefs.ConfigError{Key: "tools.mounts", Reason: reason,
		Msg: fmt.Sprintf("host mount %s: %s", strconv.Quote(m.HostPath), msg)}
}

// hydrate copies every mount into ws (the host directory behind
// /workspace). A mount whose target already exists is skipped.
func hydrate(ws string, mounts []HostMount, allowedRoots []string) error {
	if len(mounts) == 0 {
		return nil
	}
	roots, err := canonicalRoots(allowedRoots)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return &errdefs.FilesystemError{Op: "open workspace", Path: ws, Err: err}
	}
	defer root.Close()
	for _, m := range mounts {
		if err := hydrateOne(root, m, roots); err != nil {
			return err
		}
	}
	return nil
}

// canonicalRoots resolves the allowed roots; roots that do not exist are dropped.
func canonicalRoots(allowed []string) ([]string, error) {
	var out []string
	for _, r := range allowed {
		if !filepath.IsAbs(r) {
			return nil, &errdefs.ConfigError{Key: "tools.allowed_host_roots", Reason: errdefs.ErrInvalidValue,
				Msg: fmt.Sprintf("allowed host root %q must be an absolute path", r)}
		}
		res, err := filepath.EvalSymlinks(r)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, &errdefs.FilesystemError{Op: "resolve allowed host root", Path: r, Err: err}
		}
		out = append(out, res)
	}
	return out, nil
}

func insideRoots(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+string(filepath.Separator)) || filepath.Dir(r) == r {
			return true
		}
	}
	return false
}

func hydrateOne(root *os.Root, m HostMount, roots []string) error {
	if len(roots) == 0 {
		return mountError(m, errdefs.ErrMissingRequired, "no allowed host roots are configured (tools.allowed_host_roots), so nothing may be copied in")
	}
	if !filepath.IsAbs(m.HostPath) {
		return mountError(m, errdefs.ErrInvalidValue, "host_path must be absolute")
	}
	src, err := filepath.EvalSymlinks(m.HostPath)
	if err != nil {
		return &errdefs.FilesystemError{Op: "resolve host mount", Path: m.HostPath, Err: err}
	}
	if !insideRoots(src, roots) {
		return mountError(m, errdefs.ErrRefused, fmt.Sprintf("resolves to %s, outside every allowed host root (%s)", src, strings.Join(roots, ", ")))
	}
	target := m.MountPath
	if target == "" {
		target = filepath.Base(src)
	}
	rel, err := tools.CleanPath("host mount", "mount_path", target, false)
	if err != nil {
		return mountError(m, errdefs.ErrInvalidValue, err.Error())
	}
	for _, g := range append(append([]string(nil), m.IncludeGlob...), m.ExcludeGlob...) {
		if _, err := path.Match(g, ""); err != nil {
			return mountError(m, errdefs.ErrInvalidValue, fmt.Sprintf("glob %q is malformed", g))
		}
	}
	if _, err := root.Lstat(rel); err == nil {
		return nil // already hydrated: keep the workspace's own copy
	}
	budget := m.MaxBytes
	if budget <= 0 {
		budget = DefaultMountMaxBytes
	}
	c := &mountCopier{root: root, m: m, roots: roots, budget: budget, base: rel}
	info, err := os.Stat(src)
	if err != nil {
		return &errdefs.FilesystemError{Op: "stat host mount", Path: src, Err: err}
	}
	if !info.IsDir() {
		if err := root.MkdirAll(path.Dir(rel), 0o755); err != nil {
			return &errdefs.FilesystemError{Op: "create mount directory", Path: path.Dir(rel), Err: err}
		}
		return c.copyFile(src, rel, info)
	}
	if err := root.MkdirAll(rel, 0o755); err != nil {
		return &errdefs.FilesystemError{Op: "create mount directory", Path: rel, Err: err}
	}
	return c.copyDir(src, rel, 0)
}

// maxMountDepth bounds directory recursion (and symlink loops).
const maxMountDepth = 64

type mountCopier struct {
	root   *os.Root
	m      HostMount
	roots  []string
	budget int64
	used   int64
	base   string // the mount's directory, relative to the workspace
}

func (c *mountCopier) matches(globs []string, rel string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, rel); ok {
			return true
		}
		if ok, _ := path.Match(g, path.Base(rel)); ok {
			return true
		}
	}
	return false
}

// copyDir copies the entries of the host directory src into dst (relative
// to the workspace root). Globs match paths relative to the mount.
func (c *mountCopier) copyDir(src, dst string, depth int) error {
	if depth > maxMountDepth {
		return mountError(c.m, errdefs.ErrInvalidValue, "directory tree is deeper than "+strconv.Itoa(maxMountDepth)+" levels (a symlink loop?)")
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return &errdefs.FilesystemError{Op: "read host mount", Path: src, Err: err}
	}
	for _, e := range entries {
		hostPath := filepath.Join(src, e.Name())
		relTarget := path.Join(dst, e.Name())
		inMount := strings.TrimPrefix(relTarget, c.base+"/")
		if c.matches(c.m.ExcludeGlob, inMount) {
			continue
		}
		info, err := os.Lstat(hostPath)
		if err != nil {
			return &errdefs.FilesystemError{Op: "stat host mount", Path: hostPath, Err: err}
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			if !c.m.FollowSymlinks {
				continue
			}
			resolved, err := filepath.EvalSymlinks(hostPath)
			if err != nil {
				continue // dangling link: nothing to copy
			}
			if !insideRoots(resolved, c.roots) {
				return mountError(c.m, errdefs.ErrRefused, fmt.Sprintf("symlink %s points to %s, outside every allowed host root", hostPath, resolved))
			}
			if info, err = os.Stat(resolved); err != nil {
				return &errdefs.FilesystemError{Op: "stat host mount", Path: resolved, Err: err}
			}
			hostPath = resolved
		}
		switch {
		case info.IsDir():
			if err := c.root.Mkdir(relTarget, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return &errdefs.FilesystemError{Op: "create directory", Path: relTarget, Err: err}
			}
			if err := c.copyDir(hostPath, relTarget, depth+1); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if len(c.m.IncludeGlob) > 0 && !c.matches(c.m.IncludeGlob, inMount) {
				continue
			}
			if err := c.copyFile(hostPath, relTarget, info); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *mountCopier) copyFile(hostPath, rel string, info fs.FileInfo) error {
	c.used += info.Size()
	if c.used > c.budget {
		return mountError(c.m, errdefs.ErrInvalidValue, fmt.Sprintf("copying it needs more than max_bytes = %d bytes; raise max_bytes or narrow include_glob/exclude_glob", c.budget))
	}
	in, err := os.Open(hostPath)
	if err != nil {
		return &errdefs.FilesystemError{Op: "read host mount", Path: hostPath, Err: err}
	}
	defer in.Close()
	out, err := c.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm()|0o600)
	if err != nil {
		return &errdefs.FilesystemError{Op: "write workspace", Path: rel, Err: err}
	}
	// Copy at most the budget left (plus one byte to notice growth).
	n, err := copyLimited(out, in, c.budget-c.used+info.Size()+1)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &errdefs.FilesystemError{Op: "copy host mount", Path: hostPath, Err: err}
	}
	if n > info.Size() {
		return mountError(c.m, errdefs.ErrInvalidValue, fmt.Sprintf("%s grew while being copied; retry when it is stable", hostPath))
	}
	return nil
}
