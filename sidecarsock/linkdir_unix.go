//go:build unix

package sidecarsock

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"

	"github.com/podbot/podbot/errdefs"
)

// Prepare makes the link directory of the sandbox whose private host
// directory is parent (which must exist and be podbot's own): parent/sidecar,
// mode 0700, owned by uid:gid, holding a fresh key file (0400, owned by
// uid:gid) for the sidecar; podbot's copy goes to parent/sidecar.key (0600).
// It returns the link directory and the key. A link directory left by an
// earlier container of the same sandbox is reused; anything else at that
// name is refused.
func Prepare(parent string, uid, gid int) (dir string, key []byte, err error) {
	dir = filepath.Join(parent, LinkDirName)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", nil, fsErr("create sidecar link directory", dir, nil, "", err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return "", nil, fsErr("check sidecar link directory", dir, errdefs.ErrRefused, "exists but is not a directory; remove it", err)
	}
	if err := os.Lchown(dir, uid, gid); err != nil {
		return "", nil, fsErr("chown sidecar link directory", dir, nil, "", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", nil, fsErr("chmod sidecar link directory", dir, nil, "", err)
	}
	if key, err = NewKey(); err != nil {
		return "", nil, err
	}
	if err := writeAtomic(filepath.Join(parent, HostKeyName), key, 0o600, -1, -1); err != nil {
		return "", nil, err
	}
	if err := writeAtomic(filepath.Join(dir, KeyName), key, 0o400, uid, gid); err != nil {
		return "", nil, err
	}
	return dir, key, nil
}

// LoadKey reads podbot's copy of a sandbox's link key from its private host
// directory parent, without following a link.
func LoadKey(parent string) ([]byte, error) {
	return readKey(filepath.Join(parent, HostKeyName))
}

// TakeKey reads the key file in the link directory dir and removes it, so
// nothing started in the sandbox later finds it. The sidecar calls it once.
func TakeKey(dir string) ([]byte, error) {
	p := filepath.Join(dir, KeyName)
	key, err := readKey(p)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(p); err != nil {
		return nil, fsErr("remove sidecar key", p, nil, "", err)
	}
	return key, nil
}

// Listen removes whatever is left at the socket's name in the link
// directory dir and listens there, the socket closed to everyone but its
// owner (0600).
func Listen(dir string) (*net.UnixListener, error) {
	p := filepath.Join(dir, SocketName)
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fsErr("remove stale sidecar socket", p, nil, "", err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
	if err != nil {
		return nil, fsErr("listen on sidecar socket", p, nil, "", err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		l.Close()
		return nil, fsErr("chmod sidecar socket", p, nil, "", err)
	}
	l.SetUnlinkOnClose(true)
	return l, nil
}

// readKey reads a key file of exactly KeySize bytes: a regular file,
// opened without following a link or waiting on a FIFO, read no further
// than one byte past the key.
func readKey(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		reason := error(nil)
		if errors.Is(err, fs.ErrNotExist) {
			reason = errdefs.ErrNotFound
		} else if errors.Is(err, syscall.ELOOP) {
			reason = errdefs.ErrRefused
		}
		return nil, fsErr("open sidecar key", p, reason, "", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fsErr("check sidecar key", p, errdefs.ErrRefused, "not a regular file", err)
	}
	buf := make([]byte, KeySize+1)
	n, err := io.ReadFull(f, buf)
	if n != KeySize || !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fsErr("read sidecar key", p, errdefs.ErrInvalidValue, "the key file must hold exactly 32 bytes", nil)
	}
	return buf[:KeySize], nil
}

// writeAtomic writes data to p through a new temporary file beside it
// (created exclusively, never through a link), owned by uid:gid when uid
// is not negative, synced and renamed over p.
func writeAtomic(p string, data []byte, mode fs.FileMode, uid, gid int) (err error) {
	tmp := p + ".tmp"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return fsErr("write sidecar key", tmp, nil, "", err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if uid >= 0 {
		if err := f.Chown(uid, gid); err != nil {
			f.Close()
			return fsErr("chown sidecar key", tmp, nil, "", err)
		}
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fsErr("write sidecar key", tmp, nil, "", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fsErr("sync sidecar key", tmp, nil, "", err)
	}
	if err := f.Close(); err != nil {
		return fsErr("write sidecar key", tmp, nil, "", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fsErr("rename sidecar key", p, nil, "", err)
	}
	return nil
}
