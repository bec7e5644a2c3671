package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/podbot/podbot/errdefs"
)

// PrivateTempDir returns os.TempDir()/<prefix>-<uid>, made by
// EnsurePrivateDir. It is the fallback for a per-user directory (a cache)
// when the user has no home or cache directory: a name shared by every
// user of the machine, such as /tmp/podbot-cache, could be made in
// advance by another local user, who would then own what podbot keeps
// and trusts there.
func PrivateTempDir(prefix string) (string, error) {
	dir := filepath.Join(os.TempDir(), prefix+"-"+strconv.Itoa(os.Getuid()))
	if err := EnsurePrivateDir(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// EnsurePrivateDir creates dir with mode 0700 when it is missing (its
// parent must exist), and refuses an existing dir that is a symlink, not a
// directory, owned by another user, or writable by group or others. A
// refusal is a *errdefs.FilesystemError with reason errdefs.ErrRefused.
func EnsurePrivateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return &errdefs.FilesystemError{Op: "create private directory", Path: dir, Err: err}
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return &errdefs.FilesystemError{Op: "stat private directory", Path: dir, Err: err}
	}
	refuse := func(why string) error {
		return &errdefs.FilesystemError{Op: "check private directory", Path: dir, Reason: errdefs.ErrRefused,
			Msg: why + "; another user may have made it: remove it, or set XDG_CACHE_HOME or HOME to a directory of your own"}
	}
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		return refuse("it is a symlink")
	case !info.IsDir():
		return refuse("it is not a directory")
	case info.Mode().Perm()&0o022 != 0:
		return refuse(fmt.Sprintf("its mode %#o lets other users write to it", info.Mode().Perm()))
	}
	if uid, _, ok := owner(info); ok && uid != os.Getuid() {
		return refuse(fmt.Sprintf("it is owned by uid %d, not by this user (uid %d)", uid, os.Getuid()))
	}
	return nil
}
