package podbot

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/docker/docker/api/types/container"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/sandbox"
	"github.com/podbot/podbot/sidecarsock"
)

// toolSessionDirPrefix starts a tool session directory's name (see
// package sandbox).
const toolSessionDirPrefix = "session-"

// sidecarLinkDirOf is the host directory a container mounts at
// sidecarsock.Target (a tool session's link directory), or "".
func sidecarLinkDirOf(info container.InspectResponse) string {
	for _, m := range info.Mounts {
		if m.Destination == sidecarsock.Target {
			return m.Source
		}
	}
	return ""
}

// removeSidecarLink removes a removed container's link directory (its
// socket, and a key the sidecar never took) and podbot's copy of the key
// beside it, leaving the session's workspace alone. dir must look like
// one podbot made: <tools root>/session-<id>/sidecar (or pool-<pool>-<id>/
// sidecar, a pool member's, claimed or not), a real directory.
func removeSidecarLink(dir string) error {
	if dir == "" {
		return nil
	}
	parent := filepath.Base(filepath.Dir(dir))
	if !filepath.IsAbs(dir) || filepath.Base(dir) != sidecarsock.LinkDirName ||
		!strings.HasPrefix(parent, toolSessionDirPrefix) && !strings.HasPrefix(parent, sandbox.MemberDirPrefix) {
		return &errdefs.FilesystemError{Op: "remove sidecar link directory", Path: dir, Reason: errdefs.ErrRefused,
			Msg: "not a tool session's link directory; left in place"}
	}
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || !fi.IsDir() {
		return &errdefs.FilesystemError{Op: "remove sidecar link directory", Path: dir, Reason: errdefs.ErrRefused,
			Msg: "not a directory; left in place", Err: err}
	}
	errs := []error{os.RemoveAll(dir)}
	if err := os.Remove(filepath.Join(filepath.Dir(dir), sidecarsock.HostKeyName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return &errdefs.FilesystemError{Op: "remove sidecar link directory", Path: dir, Err: err}
	}
	return nil
}
