package tokendaemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/gitcred"
)

const (
	// TokenFileName is the token file's name in a container's directory.
	TokenFileName = "ghapp_token"
	// OriginFileName is the file next to the token that names the one
	// origin (scheme://host[:port]) git may send the token to.
	OriginFileName = gitcred.OriginFileName
	// ContainerSecretsDir is where a container's token directory is
	// mounted read-only inside the container.
	ContainerSecretsDir = "/run/secrets"
	// ContainerTokenPath is the token file as the container sees it.
	ContainerTokenPath = ContainerSecretsDir + "/" + TokenFileName
	// dirName is podbot's directory below $XDG_RUNTIME_DIR.
	dirName = "podbot"
	// maxIDLen bounds container ids and names used as directory names.
	maxIDLen = 128
)

// TokenDir returns $XDG_RUNTIME_DIR/podbot/<containerID> for the runtime
// directory xdgRuntimeDir, after checking both: the runtime directory must
// be absolute, and the id a container id or name ([A-Za-z0-9][A-Za-z0-9_.-]*,
// at most 128 bytes) so it cannot leave the podbot directory.
func TokenDir(xdgRuntimeDir, containerID string) (string, error) {
	if xdgRuntimeDir == "" || !filepath.IsAbs(xdgRuntimeDir) {
		return "", &errdefs.ConfigError{Key: "XDG_RUNTIME_DIR", Source: "environment", Reason: errdefs.ErrMissingRequired,
			Msg: fmt.Sprintf("the token daemon needs an absolute per-user runtime directory, got %q; run it in a login session (systemd --user) or set XDG_RUNTIME_DIR", xdgRuntimeDir)}
	}
	if !validID(containerID) {
		return "", &errdefs.ContainerError{Op: "token dir", Container: containerID, Reason: errdefs.ErrRefused,
			Msg: "not a valid container id or name for a token directory"}
	}
	return filepath.Join(filepath.Clean(xdgRuntimeDir), dirName, containerID), nil
}

// EnsureDir creates the private token directory of containerID (and
// podbot's directory above it) without writing a token, and returns it. A
// container whose token directory was removed when it stopped needs it back
// before it can start, since the directory is a bind mount's source.
func EnsureDir(xdgRuntimeDir, containerID string) (string, error) {
	dir, err := TokenDir(xdgRuntimeDir, containerID)
	if err != nil {
		return "", err
	}
	if err := ensurePrivateDir(filepath.Dir(dir)); err != nil {
		return "", err
	}
	return dir, ensurePrivateDir(dir)
}

func validID(id string) bool {
	if id == "" || len(id) > maxIDLen {
		return false
	}
	for i, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case (c == '_' || c == '.' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// ensurePrivateDir creates dir with mode 0700, or checks that an existing
// dir is a real directory (not a symlink) and tightens its mode to 0700.
func ensurePrivateDir(dir string) error {
	err := os.Mkdir(dir, 0o700)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return &errdefs.FilesystemError{Op: "mkdir", Path: dir, Msg: "cannot create the token directory", Err: err}
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return &errdefs.FilesystemError{Op: "stat", Path: dir, Err: err}
	}
	if !info.IsDir() {
		return &errdefs.FilesystemError{Op: "stat", Path: dir, Reason: errdefs.ErrRefused,
			Msg: "exists but is not a directory (or is a symlink); remove it"}
	}
	if info.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return &errdefs.FilesystemError{Op: "chmod", Path: dir, Msg: "cannot make the token directory private", Err: err}
		}
	}
	return nil
}
