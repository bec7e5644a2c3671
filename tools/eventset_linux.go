//go:build linux

package tools

import (
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// eventSet waits for any of a command's descriptors (pipes, pidfd,
// eventfd) through Go's network poller: the descriptors sit in an epoll
// instance of their own, which is registered with the poller like a
// socket. A supervisor with nothing to do parks its goroutine, and its
// thread goes back to the scheduler. Blocking a thread in poll(2) instead
// makes the runtime hand the thread's P to another thread and keeps its
// monitor thread waking every 20 µs while the command runs, on the same
// CPU as the command in a one-CPU sandbox.
type eventSet struct {
	fd     int
	file   *os.File // fd, registered with the poller
	conn   syscall.RawConn
	events []unix.EpollEvent
}

// newEventSet creates an empty set, registered with the poller.
func newEventSet() (*eventSet, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	// Non-blocking, so that os.NewFile registers it with the poller.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	file := os.NewFile(uintptr(fd), "|epoll")
	conn, err := file.SyscallConn()
	if err != nil {
		file.Close()
		return nil, err
	}
	return &eventSet{fd: fd, file: file, conn: conn, events: make([]unix.EpollEvent, 8)}, nil
}

// add watches fd for events (level-triggered); a negative fd is ignored.
func (e *eventSet) add(fd int, events uint32) error {
	if fd < 0 {
		return nil
	}
	return unix.EpollCtl(e.fd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: events, Fd: int32(fd)})
}

// remove stops watching fd; call it before closing fd.
func (e *eventSet) remove(fd int) {
	if fd >= 0 {
		_ = unix.EpollCtl(e.fd, unix.EPOLL_CTL_DEL, fd, nil)
	}
}

// wait returns the ready events once at least one is ready, or none when
// deadline (the zero time: none) passes first.
func (e *eventSet) wait(deadline time.Time) ([]unix.EpollEvent, error) {
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		// The poller refuses to look once a deadline has passed.
		n, err := e.ready()
		return e.events[:n], err
	}
	if err := e.file.SetReadDeadline(deadline); err != nil {
		return nil, err
	}
	var n int
	var readyErr error
	err := e.conn.Read(func(uintptr) bool {
		n, readyErr = e.ready()
		return n > 0 || readyErr != nil
	})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return e.events[:n], readyErr
}

// ready collects the events ready now, without waiting.
func (e *eventSet) ready() (int, error) {
	for {
		n, err := unix.EpollWait(e.fd, e.events, 0)
		if err != unix.EINTR {
			return max(n, 0), err
		}
	}
}

// close releases the set (not the descriptors in it).
func (e *eventSet) close() { e.file.Close() }
