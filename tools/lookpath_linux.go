//go:build linux

package tools

import "golang.org/x/sys/unix"

// mountReadOnly reports whether dir is on a file system mounted read-only.
func mountReadOnly(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Flags&unix.ST_RDONLY != 0
}
