//go:build unix

package workspace

import (
	"io/fs"
	"syscall"
)

// owner returns the uid and gid that own a file.
func owner(info fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}
