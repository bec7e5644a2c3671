//go:build linux

package sidecarsock

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/podbot/podbot/errdefs"
)

// Dial connects to the sidecar socket in the link directory dir and runs
// the handshake with key. dir must be a clean absolute path without
// symlinks: every component is opened with O_NOFOLLOW, so a link anywhere
// on the way fails the dial instead of being followed. The directory must
// be owned by owner and closed to group and others; the socket in it must
// be a socket owned by owner. The socket is opened as an O_PATH descriptor
// first and connected through /proc/self/fd, so what is connected is the
// very inode that was checked, whatever the sandbox renames meanwhile.
//
// A missing socket is an error matching errdefs.ErrNotFound (the sidecar
// may not listen yet); anything else found in its place, or a directory
// that is not as it should be, matches errdefs.ErrRefused; a peer that
// fails the handshake matches errdefs.ErrAuth.
func Dial(ctx context.Context, dir string, owner int, key []byte) (net.Conn, error) {
	dfd, err := openDirNoFollow(dir)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return nil, fsErr("stat link directory", dir, nil, "", err)
	}
	if int(st.Uid) != owner || st.Mode&0o077 != 0 {
		return nil, fsErr("check link directory", dir, errdefs.ErrRefused,
			"the sidecar link directory must be owned by uid "+strconv.Itoa(owner)+" and private (0700); remove the session", nil)
	}
	sock := filepath.Join(dir, SocketName)
	sfd, err := unix.Openat(dfd, SocketName, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, fsErr("open sidecar socket", sock, errdefs.ErrNotFound, "the sidecar is not listening (yet)", err)
	}
	if err != nil {
		return nil, fsErr("open sidecar socket", sock, nil, "", err)
	}
	defer unix.Close(sfd)
	if err := unix.Fstat(sfd, &st); err != nil {
		return nil, fsErr("stat sidecar socket", sock, nil, "", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, fsErr("check sidecar socket", sock, errdefs.ErrRefused,
			"found a "+fileKind(st.Mode)+" where the sidecar's socket belongs; it is never followed or read", nil)
	}
	if int(st.Uid) != owner {
		return nil, fsErr("check sidecar socket", sock, errdefs.ErrRefused,
			"the socket is owned by uid "+strconv.Itoa(int(st.Uid))+", not the sandbox user "+strconv.Itoa(owner), nil)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(sfd))
	if err != nil {
		return nil, &errdefs.ContainerError{Op: "connect sidecar socket", Container: dir, Reason: errdefs.ErrConnectionFailed,
			Msg: "the sidecar does not accept connections", Err: err}
	}
	deadline, _ := ctx.Deadline()
	if err := Client(c, key, deadline); err != nil {
		c.Close()
		reason := errdefs.ErrConnectionFailed
		if errors.Is(err, ErrAuth) {
			reason = errdefs.ErrAuth
		}
		return nil, &errdefs.ContainerError{Op: "sidecar socket handshake", Container: dir, Reason: reason,
			Msg: "the sidecar socket did not complete podbot's handshake", Err: err}
	}
	return c, nil
}

// openDirNoFollow opens the clean absolute directory path dir as an O_PATH
// descriptor, one component at a time, never following a symlink.
func openDirNoFollow(dir string) (int, error) {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return -1, fsErr("open link directory", dir, errdefs.ErrInvalidValue, "the link directory must be a clean absolute path", nil)
	}
	const flags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Open("/", flags, 0)
	if err != nil {
		return -1, fsErr("open link directory", "/", nil, "", err)
	}
	for _, name := range strings.Split(strings.TrimPrefix(dir, "/"), "/") {
		if name == "" {
			continue
		}
		next, err := unix.Openat(fd, name, flags, 0)
		unix.Close(fd)
		if err != nil {
			reason := error(nil)
			switch {
			case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
				reason = errdefs.ErrRefused
			case errors.Is(err, unix.ENOENT):
				reason = errdefs.ErrNotFound
			}
			return -1, fsErr("open link directory", dir, reason, "a component ("+name+") is missing, a symlink or not a directory; links are never followed", err)
		}
		fd = next
	}
	return fd, nil
}

func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFREG:
		return "regular file"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "device"
	}
	return "special file"
}
