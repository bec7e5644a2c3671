package launchplan

import (
	"path"
	"path/filepath"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// checkHostPath requires an absolute, already clean host path that is not the
// filesystem root. Resolution of symlinks is the caller's job.
func checkHostPath(key, p string) error {
	switch {
	case p == "":
		return configError(key, errdefs.ErrMissingRequired, "a host path is required")
	case strings.ContainsRune(p, 0):
		return configError(key, errdefs.ErrInvalidValue, "host path %q contains a NUL byte", p)
	case !filepath.IsAbs(p):
		return configError(key, errdefs.ErrInvalidValue, "host path %q must be absolute", p)
	case filepath.Clean(p) != p:
		return configError(key, errdefs.ErrInvalidValue,
			"host path %q must be canonical (resolve it first; expected %q)", p, filepath.Clean(p))
	case filepath.Dir(p) == p:
		return configError(key, errdefs.ErrRefused, "host path %q is the filesystem root; name a directory below it", p)
	}
	return nil
}

// checkContainerPath requires an absolute, clean container path that is not /.
func checkContainerPath(key, p string) error {
	switch {
	case p == "":
		return configError(key, errdefs.ErrMissingRequired, "a container path is required")
	case strings.ContainsRune(p, 0):
		return configError(key, errdefs.ErrInvalidValue, "container path %q contains a NUL byte", p)
	case !path.IsAbs(p):
		return configError(key, errdefs.ErrInvalidValue, "container path %q must be absolute (for example /workspace)", p)
	case path.Clean(p) != p:
		return configError(key, errdefs.ErrInvalidValue,
			"container path %q must be clean (no .., //, trailing /); expected %q", p, path.Clean(p))
	case p == "/":
		return configError(key, errdefs.ErrRefused, "container path / is refused; name a directory such as /workspace")
	}
	return nil
}

// hostPathWithin reports whether p equals root or lies below it. Both must be
// clean absolute paths.
func hostPathWithin(p, root string) bool {
	if p == root {
		return true
	}
	if filepath.Dir(root) == root { // root is the filesystem root
		return true
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}
