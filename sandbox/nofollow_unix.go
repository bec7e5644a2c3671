//go:build unix

package sandbox

import "syscall"

// noFollow makes an open fail on a symlink instead of following it.
const noFollow = syscall.O_NOFOLLOW

// openNoWait makes opening a FIFO return at once instead of waiting for
// a writer, and opening a terminal never make it the controlling one.
const openNoWait = syscall.O_NONBLOCK | syscall.O_NOCTTY
