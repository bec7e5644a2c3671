//go:build unix

package sandbox

import (
	"os"
	"syscall"
)

// noFollow makes an open fail on a symlink instead of following it.
const noFollow = syscall.O_NOFOLLOW

// openNoWait makes opening a FIFO return at once instead of waiting for
// a writer, and opening a terminal never make it the controlling one.
const openNoWait = syscall.O_NONBLOCK | syscall.O_NOCTTY

// ownedByMe reports whether fi belongs to this process's effective user.
func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
