//go:build unix

package tools

import "syscall"

// openNoWait are the flags every read of a workspace path adds: opening a
// FIFO returns at once instead of waiting for a writer, and opening a
// terminal device never makes it the controlling terminal. The type is
// then checked on the opened descriptor, so a path swapped between a
// check and the open cannot make a tool block.
const openNoWait = syscall.O_NONBLOCK | syscall.O_NOCTTY

// openNoFollow makes an open fail on a symlink instead of following it.
const openNoFollow = syscall.O_NOFOLLOW
