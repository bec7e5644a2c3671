//go:build unix

package main

import (
	"io/fs"
	"os"
	"syscall"
)

// pollable returns f as a File the Go runtime's network poller waits on,
// when f is a pipe or a socket; anything else (a terminal, a file) comes
// back unchanged. A blocking read parks a whole thread, and with one CPU
// (GOMAXPROCS=1 in a sandbox) the goroutine that handles the request then
// waits for the runtime to take the processor back from that thread; a
// polled read parks only the goroutine, so a request runs at once.
//
// polled reports whether the returned File is polled; closing a polled
// File unblocks a pending Read. f must not be read through afterwards: its
// descriptor is shared with the returned File, which owns it from then on.
func pollable(f *os.File) (_ *os.File, polled bool) {
	st, err := f.Stat()
	if err != nil || st.Mode()&(fs.ModeNamedPipe|fs.ModeSocket) == 0 {
		return f, false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return f, false
	}
	var fd uintptr
	var nbErr error
	if err := rc.Control(func(d uintptr) {
		fd = d
		nbErr = syscall.SetNonblock(int(d), true)
	}); err != nil || nbErr != nil {
		return f, false
	}
	return os.NewFile(fd, f.Name()), true
}
