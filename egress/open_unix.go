//go:build unix

package egress

import "syscall"

// oNoFollow makes opening a secrets file fail on a symlink, and not wait
// on a FIFO (which is then refused as not a regular file).
const oNoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
