//go:build linux

package tools

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// readBuffer is the size of one read from a command's output pipe.
const readBuffer = 32 << 10

// run starts spec.argv in its own process group and supervises it from the
// calling goroutine alone: one event loop feeds stdin, drains stdout and
// stderr, watches the process through a pidfd and enforces the timeout. No
// goroutine per stream and no hand-offs between them: on a one-CPU sandbox
// those are a measurable share of a short command's cost. The loop waits
// in Go's network poller (eventSet), so its thread is free while the
// command runs.
//
// On timeout the group gets SIGTERM, then SIGKILL after KillGrace. When the
// command exits, whatever is left of its group is killed, so no child
// outlives a call; output still buffered is drained for at most KillGrace
// (a process that left the group may hold the pipes open). Output beyond
// spec.limit bytes per stream is drained and dropped. Only a cancelled ctx
// is an error; a command that cannot start or fails is reported in the
// output.
func (w *Workspace) run(ctx context.Context, spec runSpec) (runOutput, error) {
	path := spec.argv[0]
	if filepath.Base(path) == path {
		lp, err := w.paths.lookPath(path)
		if err != nil {
			return startFailure(path, err, 0), nil
		}
		path = lp
	}
	null, err := w.devNull()
	if err != nil {
		return runOutput{}, fmt.Errorf("start %s: open %s: %w", filepath.Base(path), os.DevNull, err)
	}
	s, err := newSupervisor(spec, null)
	if err != nil {
		return runOutput{}, err
	}
	defer s.close()
	start := time.Now()
	proc, err := os.StartProcess(path, spec.argv, &os.ProcAttr{
		Dir: spec.dir, Env: spec.env, Files: s.childFiles[:], Sys: newProcAttr(),
	})
	s.closeChildEnds()
	if err != nil {
		if ctx.Err() != nil {
			return runOutput{}, ctx.Err()
		}
		return startFailure(spec.argv[0], err, time.Since(start)), nil
	}
	out, err := s.supervise(ctx, proc, start.Add(spec.timeout))
	out.duration = s.exitedAt.Sub(start)
	if ctx.Err() != nil {
		return runOutput{}, ctx.Err()
	}
	return out, err
}

// devNull returns the workspace's /dev/null, opened once and shared by
// every command started in it (the child gets its own duplicate).
func (w *Workspace) devNull() (*os.File, error) {
	w.nullOnce.Do(func() { w.null, w.nullErr = os.OpenFile(os.DevNull, os.O_RDWR, 0) })
	return w.null, w.nullErr
}

// supervisor holds the pipes and file descriptors of one running command.
type supervisor struct {
	spec       runSpec
	childFiles [3]*os.File // the command's stdin, stdout and stderr
	devNull    *os.File    // the workspace's, shared: never closed here
	stdin      int         // our end of the command's stdin, or -1
	stdout     int         // our end of the command's stdout, or -1
	stderr     int         // our end of the command's stderr, or -1
	stdinLeft  []byte
	wake       int // eventfd: ctx ended or (without pidfd) the process exited
	events     *eventSet
	outBuf     cappedBuffer
	errBuf     cappedBuffer
	exitedAt   time.Time
}

// newSupervisor opens the pipes spec asks for; null (an open /dev/null)
// serves the rest. Every descriptor is close-on-exec, so a concurrent
// start elsewhere in the process never inherits one.
func newSupervisor(spec runSpec, null *os.File) (*supervisor, error) {
	s := &supervisor{spec: spec, stdin: -1, stdout: -1, stderr: -1, wake: -1, devNull: null}
	fail := func(op string, err error) (*supervisor, error) {
		s.closeChildEnds()
		s.close()
		return nil, fmt.Errorf("start %s: %s: %w", filepath.Base(spec.argv[0]), op, err)
	}
	s.childFiles = [3]*os.File{null, null, null}
	var err error
	if spec.stdin != "" {
		r, w, err := nonblockingPipe(false)
		if err != nil {
			return fail("stdin pipe", err)
		}
		s.childFiles[0], s.stdin, s.stdinLeft = r, w, []byte(spec.stdin)
	}
	if spec.capture {
		s.outBuf.limit, s.errBuf.limit = spec.limit, spec.limit
		for i, fd := range []*int{&s.stdout, &s.stderr} {
			w, r, err := nonblockingPipe(true)
			if err != nil {
				return fail("output pipe", err)
			}
			s.childFiles[i+1], *fd = w, r
		}
	}
	if s.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return fail("eventfd", err)
	}
	if s.events, err = newEventSet(); err != nil {
		return fail("epoll", err)
	}
	err = errors.Join(s.events.add(s.stdout, unix.EPOLLIN), s.events.add(s.stderr, unix.EPOLLIN),
		s.events.add(s.stdin, unix.EPOLLOUT), s.events.add(s.wake, unix.EPOLLIN))
	if err != nil {
		return fail("epoll", err)
	}
	return s, nil
}

// nonblockingPipe makes a pipe whose end for the command is an *os.File
// (blocking, as programs expect) and whose end for podbot is a raw
// non-blocking descriptor. forOutput picks which end the command writes.
func nonblockingPipe(forOutput bool) (child *os.File, ours int, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, -1, err
	}
	childFD, ourFD := p[0], p[1] // stdin: the command reads
	if forOutput {
		childFD, ourFD = p[1], p[0] // output: the command writes
	}
	if err := unix.SetNonblock(ourFD, true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, -1, err
	}
	return os.NewFile(uintptr(childFD), "|pipe"), ourFD, nil
}

// closeChildEnds closes the command's ends of the pipes in this process,
// so that EOF on an output pipe means every writer is gone.
func (s *supervisor) closeChildEnds() {
	for i, f := range s.childFiles {
		if f != nil && f != s.devNull {
			f.Close()
		}
		s.childFiles[i] = nil
	}
}

// close releases the event set and podbot's ends. The set goes first, and
// its watches with it, so the descriptors need no removal one by one.
func (s *supervisor) close() {
	if s.events != nil {
		s.events.close()
		s.events = nil
	}
	for _, fd := range []*int{&s.stdin, &s.stdout, &s.stderr, &s.wake} {
		closeFD(fd)
	}
}

// closeWatched stops watching *fd and closes it. The watch is removed
// first: a command starting concurrently elsewhere in the process may
// briefly hold a copy of the descriptor (until its exec), which would
// keep a closed one in the set.
func (s *supervisor) closeWatched(fd *int) {
	if s.events != nil {
		s.events.remove(*fd)
	}
	closeFD(fd)
}

func closeFD(fd *int) {
	if *fd >= 0 {
		unix.Close(*fd)
		*fd = -1
	}
}

// supervise runs the event loop until the command has exited and its output
// is drained (or the drain grace is over), and reports what it produced.
func (s *supervisor) supervise(ctx context.Context, proc *os.Process, deadline time.Time) (runOutput, error) {
	pid := proc.Pid
	// The pidfd turns readable when the process exits, before it is
	// reaped, so its group can still be signalled safely then. Without
	// pidfd support, a goroutine waits and rings the eventfd. Helpers that
	// ring the eventfd are waited for before it is closed.
	wakeFD := s.wake
	exitFD := -1
	if !s.spec.waitThread {
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			exitFD = fd
		}
	}
	var waited chan waitResult
	if exitFD < 0 {
		waited = make(chan waitResult, 1)
		rung := make(chan struct{})
		go func() {
			st, err := proc.Wait()
			waited <- waitResult{st, err}
			ring(wakeFD)
			close(rung)
		}()
		defer func() { <-rung }()
	} else {
		defer unix.Close(exitFD)
		if err := s.events.add(exitFD, unix.EPOLLIN); err != nil {
			_ = signalGroup(pid, sigKill)
			_, _ = proc.Wait()
			s.exitedAt = time.Now()
			return runOutput{}, fmt.Errorf("supervise %s: epoll: %w", filepath.Base(s.spec.argv[0]), err)
		}
	}
	ctxRung := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { ring(wakeFD); close(ctxRung) })
	defer func() {
		if !stop() {
			<-ctxRung
		}
	}()

	var (
		out       runOutput
		exited    bool
		state     *os.ProcessState
		waitErr   error
		stopping  bool      // SIGTERM sent (timeout or cancellation)
		killAt    time.Time // when SIGKILL follows SIGTERM
		drainEnd  time.Time // after exit: when to stop waiting for output
		buf       = make([]byte, readBuffer)
		cancelled = ctx.Done()
	)
	onExit := func(st *os.ProcessState, err error) {
		exited, state, waitErr = true, st, err
		s.exitedAt = time.Now()
		drainEnd = s.exitedAt.Add(KillGrace)
		s.closeWatched(&s.stdin)
		s.events.remove(exitFD) // readable from now on: no longer news
	}
	for {
		if exited && s.stdout < 0 && s.stderr < 0 {
			break
		}
		now := time.Now()
		if !exited {
			if !stopping && (!now.Before(deadline) || isDone(cancelled)) {
				stopping = true
				out.timedOut = !now.Before(deadline)
				_ = signalGroup(pid, sigTerm)
				killAt = now.Add(KillGrace)
			}
			if stopping && !killAt.IsZero() && !now.Before(killAt) {
				_ = signalGroup(pid, sigKill)
				killAt = time.Time{}
			}
		} else if !now.Before(drainEnd) {
			break
		}

		next := drainEnd
		switch {
		case !exited && !stopping:
			next = deadline
		case !exited && !killAt.IsZero():
			next = killAt
		case !exited:
			next = time.Time{} // SIGKILL sent: wait for the exit itself
		}
		ready, err := s.events.wait(next)
		if err != nil {
			_ = signalGroup(pid, sigKill)
			switch {
			case exited:
			case waited != nil:
				r := <-waited
				onExit(r.state, r.err)
			default:
				st, werr := proc.Wait()
				onExit(st, werr)
			}
			return out, fmt.Errorf("supervise %s: wait for events: %w", filepath.Base(s.spec.argv[0]), err)
		}
		for _, ev := range ready {
			switch int(ev.Fd) {
			case s.stdout:
				s.drain(&s.stdout, &s.outBuf, buf)
			case s.stderr:
				s.drain(&s.stderr, &s.errBuf, buf)
			case s.stdin:
				s.feed()
			case s.wake:
				var b [8]byte
				_, _ = unix.Read(s.wake, b[:])
			case exitFD:
				if exited {
					continue // reported twice in one batch
				}
				// Exited, not yet reaped: its group id cannot have been
				// reused, so the leftovers can be killed safely.
				_ = signalGroup(pid, sigKill)
				st, werr := proc.Wait()
				onExit(st, werr)
			}
		}
		if waited != nil && !exited {
			select {
			case r := <-waited:
				_ = signalGroup(pid, sigKill)
				onExit(r.state, r.err)
			default:
			}
		}
	}
	out.stdout, out.stderr = s.outBuf.String(), s.errBuf.String()
	switch {
	case out.timedOut:
		out.exitCode = TimeoutExitCode
	case state != nil:
		out.exitCode = exitStatus(state)
	default:
		msg := "no exit status"
		if waitErr != nil {
			msg = waitErr.Error()
		}
		out.exitCode = 1
		out.stderr += "podbot: " + msg
	}
	return out, nil
}

type waitResult struct {
	state *os.ProcessState
	err   error
}

// drain reads what the pipe holds into dst; EOF or an error closes it.
func (s *supervisor) drain(fd *int, dst *cappedBuffer, buf []byte) {
	for {
		n, err := unix.Read(*fd, buf)
		if n > 0 {
			_, _ = dst.Write(buf[:n])
			continue
		}
		if err == unix.EAGAIN || err == unix.EINTR {
			return
		}
		s.closeWatched(fd) // EOF (n == 0) or a read error
		return
	}
}

// feed writes as much of stdin as the pipe takes; when all is written, or
// the command closed its end, our end is closed so the command sees EOF.
func (s *supervisor) feed() {
	for len(s.stdinLeft) > 0 {
		n, err := unix.Write(s.stdin, s.stdinLeft)
		if n > 0 {
			s.stdinLeft = s.stdinLeft[n:]
			continue
		}
		if err == unix.EAGAIN || err == unix.EINTR {
			return
		}
		break // EPIPE: the command does not read its input
	}
	s.stdinLeft = nil
	s.closeWatched(&s.stdin)
}

// ring wakes the event loop: it adds one to the eventfd's counter.
func ring(fd int) {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(fd, one[:])
}

func isDone(c <-chan struct{}) bool {
	if c == nil {
		return false
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}
