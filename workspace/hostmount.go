package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// Mount is a resolved host-mount workspace.
type Mount struct {
	// Source is the canonical host directory (symlinks resolved).
	Source string
	// Target is the absolute container path.
	Target string
	// UID and GID own Source on the host; OwnerKnown is false where the
	// platform does not report them. The agent of a host-mount sandbox runs
	// as this owner, so what it writes belongs to them.
	UID, GID   int
	OwnerKnown bool
	// GitDir is Source/.git when it is a directory holding a config file:
	// its config and hooks are kept read-only in the sandbox.
	GitDir string
}

// String renders the mount for the audit line podbot prints on stderr.
func (m Mount) String() string { return m.Source + " -> " + m.Target }

// ResolveHostMount applies the host-mount path policy. hostPath must be
// absolute, without ".." components, and name an existing directory; it is
// canonicalised with filepath.EvalSymlinks and must then lie inside one of
// policy.AllowedRoots, which are resolved the same way (roots that do not
// exist are skipped). A symlink anywhere in hostPath that leads outside every
// root is refused, and so is the filesystem root itself. The tree is then
// refused when it is the home directory, contains or lies inside a protected
// path (policy.Protected, the home directory's credential directories), or
// holds a unix socket anywhere (a walk bounded by policy.MaxScanEntries).
// containerPath must be a clean absolute path other than "/".
//
// Errors are *errdefs.ConfigError for bad or refused values (key
// workspace.host_path, workspace.container_path, workspace.allowed_roots or
// workspace.max_scan_entries)
// and *errdefs.FilesystemError for paths that cannot be resolved.
//
// The check is made at resolution time: whoever can write inside an allowed
// root could still swap a directory for a symlink before the engine mounts
// it, so roots should only be writable by the operator.
func ResolveHostMount(hostPath, containerPath string, policy HostMountPolicy) (Mount, error) {
	allowedRoots := policy.AllowedRoots
	if err := checkTarget(containerPath); err != nil {
		return Mount{}, err
	}
	if err := checkSource(hostPath); err != nil {
		return Mount{}, err
	}
	if len(allowedRoots) == 0 {
		return Mount{}, &errdefs.ConfigError{Key: "workspace.allowed_roots", Reason: errdefs.ErrMissingRequired,
			Msg: "no allowed roots are configured, so no host path may be mounted; list the parent directories of your projects"}
	}
	resolved, err := filepath.EvalSymlinks(hostPath)
	if err != nil {
		return Mount{}, fsError("resolve", hostPath, err)
	}
	info, err := os.Stat(resolved)
	if err != nil {
		return Mount{}, fsError("stat", resolved, err)
	}
	if !info.IsDir() {
		return Mount{}, &errdefs.ConfigError{Key: "workspace.host_path", Reason: errdefs.ErrInvalidValue,
			Msg: "host path " + quote(hostPath) + " is not a directory"}
	}
	if filepath.Dir(resolved) == resolved {
		return Mount{}, refuse(hostPath, "is the filesystem root")
	}
	roots, skipped, err := resolveRoots(allowedRoots)
	if err != nil {
		return Mount{}, err
	}
	for _, r := range roots {
		if within(resolved, r) {
			if err := guardTree(hostPath, resolved, policy); err != nil {
				return Mount{}, err
			}
			git, err := gitDir(hostPath, resolved)
			if err != nil {
				return Mount{}, err
			}
			m := Mount{Source: resolved, Target: containerPath, GitDir: git}
			m.UID, m.GID, m.OwnerKnown = owner(info)
			return m, nil
		}
	}
	outside := "outside every allowed root (" + strings.Join(roots, ", ") + ")"
	why := "is " + outside
	if resolved != filepath.Clean(hostPath) {
		why = "resolves through a symlink to " + quote(resolved) + ", " + outside
	}
	if len(skipped) > 0 {
		why += "; allowed roots that do not exist were skipped: " + strings.Join(skipped, ", ")
	}
	return Mount{}, refuse(hostPath, why)
}

// checkTarget validates the container path of a host mount.
func checkTarget(p string) error {
	bad := func(reason error, msg string) error {
		return &errdefs.ConfigError{Key: "workspace.container_path", Reason: reason,
			Msg: "container path " + quote(p) + " " + msg}
	}
	switch {
	case p == "":
		return bad(errdefs.ErrMissingRequired, "is empty; use an absolute path such as /workspace")
	case !path.IsAbs(p):
		return bad(errdefs.ErrInvalidValue, "must be absolute, for example /workspace")
	case p == "/" || path.Clean(p) == "/":
		return bad(errdefs.ErrRefused, "may not be /; use a directory such as /workspace")
	case path.Clean(p) != p || strings.ContainsRune(p, 0):
		return bad(errdefs.ErrInvalidValue, "must be clean (no '..', '//', '.' or trailing '/'), for example "+quote(path.Clean(p)))
	}
	return nil
}

// checkSource validates the host path before any filesystem access.
func checkSource(p string) error {
	bad := func(reason error, msg string) error {
		return &errdefs.ConfigError{Key: "workspace.host_path", Reason: reason,
			Msg: "host path " + quote(p) + " " + msg}
	}
	switch {
	case p == "":
		return bad(errdefs.ErrMissingRequired, "is empty; set workspace.host_path or --workspace")
	case strings.ContainsRune(p, 0):
		return bad(errdefs.ErrInvalidValue, "contains a NUL byte")
	case !filepath.IsAbs(p):
		return bad(errdefs.ErrInvalidValue, "must be absolute")
	case slices.Contains(strings.Split(filepath.ToSlash(p), "/"), ".."):
		return bad(errdefs.ErrRefused, "contains '..'; give the directory's own path")
	}
	return nil
}

// resolveRoots canonicalises the allowed roots. Roots that do not exist are
// returned in skipped; any other failure is an error.
func resolveRoots(allowed []string) (roots, skipped []string, err error) {
	for _, r := range allowed {
		if r == "" || !filepath.IsAbs(r) || strings.ContainsRune(r, 0) {
			return nil, nil, &errdefs.ConfigError{Key: "workspace.allowed_roots", Reason: errdefs.ErrInvalidValue,
				Msg: "allowed root " + quote(r) + " must be an absolute host path"}
		}
		res, err := filepath.EvalSymlinks(r)
		if errors.Is(err, fs.ErrNotExist) {
			skipped = append(skipped, r)
			continue
		}
		if err != nil {
			return nil, nil, fsError("resolve allowed root", r, err)
		}
		roots = append(roots, res)
	}
	return roots, skipped, nil
}

// within reports whether p equals root or lies below it (both canonical).
func within(p, root string) bool {
	if p == root || filepath.Dir(root) == root {
		return true
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}

func refuse(hostPath, why string) error {
	return &errdefs.ConfigError{Key: "workspace.host_path", Reason: errdefs.ErrRefused,
		Msg: "host path " + quote(hostPath) + " " + why + "; mount a directory inside workspace.allowed_roots or add its root there"}
}

func fsError(op, p string, err error) error {
	reason := error(nil)
	msg := ""
	switch {
	case errors.Is(err, fs.ErrNotExist):
		reason, msg = errdefs.ErrNotFound, "does not exist"
	case errors.Is(err, fs.ErrPermission):
		reason, msg = errdefs.ErrPermissionDenied, "permission denied"
	}
	return &errdefs.FilesystemError{Op: op, Path: p, Reason: reason, Msg: msg, Err: err}
}

// maxLinks bounds the symbolic links Holds follows, as the kernel bounds
// them (ELOOP).
const maxLinks = 40

// Holds reports whether the host path p depends on anything inside the
// mount's source directory, and returns p resolved. p is resolved one
// component at a time, following symlinks (dangling ones too); it is inside
// when it resolves into the mount, or when any directory entry looked up on
// the way (a symlink the sandbox could repoint, a directory it could
// replace) lies in the mount. A file that does not exist yet counts where
// it would be created. A relative p is taken from the current directory.
func (m Mount) Holds(p string) (resolved string, inside bool, err error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", false, fsError("resolve", p, err)
	}
	resolved, inside, err = walkPath(abs, func(entry string) bool { return within(entry, m.Source) })
	if err != nil {
		return "", false, fsError("resolve", p, err)
	}
	return resolved, inside || within(resolved, m.Source), nil
}

// walkPath resolves the absolute path p as the kernel would, component by
// component, calling hit with each directory entry it looks up (its parent
// resolved). It reports whether hit returned true for any of them. Where a
// component does not exist, the rest is joined as it would be created.
func walkPath(p string, hit func(entry string) bool) (string, bool, error) {
	todo := strings.Split(strings.TrimPrefix(p, string(filepath.Separator)), string(filepath.Separator))
	cur := string(filepath.Separator)
	hits, links, missing := false, 0, false
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		if missing {
			cur = next
			continue
		}
		hits = hit(next) || hits
		info, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			missing = true
			cur = next
			continue
		case err != nil:
			return "", false, err
		case info.Mode()&fs.ModeSymlink == 0:
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", false, &fs.PathError{Op: "resolve", Path: p, Err: errors.New("too many levels of symbolic links")}
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", false, err
		}
		if filepath.IsAbs(target) {
			cur = string(filepath.Separator)
		}
		todo = append(strings.Split(target, string(filepath.Separator)), todo...)
	}
	return cur, hits, nil
}
