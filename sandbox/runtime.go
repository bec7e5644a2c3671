package sandbox

import (
	"context"
	"fmt"
	"io"
	"sync"
)

// runtime is what the container backend needs from a container engine.
// The engine implementation is engineRuntime; tests use a fake.
type runtime interface {
	// start creates and starts a container whose /workspace is the host
	// directory spec.workspaceDir, running podbot-sidecar init.
	start(ctx context.Context, spec containerSpec) (startedContainer, error)
	// attach starts `podbot-sidecar serve` in the container over one
	// attached exec stream.
	attach(ctx context.Context, id string) (*stream, error)
	// running reports whether the container exists and runs.
	running(ctx context.Context, id string) (bool, error)
	// remove force-removes container id, called name, with what the
	// runtime made for it (ContainerOptions.Network's plumbing); a missing
	// one is not an error.
	remove(ctx context.Context, id, name string) error
	// linkOwner is the host uid:gid a session's link directory is given
	// to (the sidecar's user), or false when the runtime cannot give its
	// containers one (see sidecarsock).
	linkOwner() (uid, gid int, ok bool)
	// linkMissing notes that a new container's sidecar socket never
	// appeared: later containers are started without one.
	linkMissing()
}

// containerSpec is what start needs to know about the session.
type containerSpec struct {
	sessionID    string
	name         string
	workspaceDir string
	// labels are podbot's own labels for the container (a pool member's),
	// added after the plan's reserved-key check.
	labels map[string]string
	// linkDir, when set, is the session's link directory: it is mounted
	// at sidecarsock.Target and init starts the sidecar serving there.
	linkDir string
}

// startedContainer identifies a started container.
type startedContainer struct {
	id, name string
	cpus     string // the CPUs it is pinned to, or ""
}

// stream is one attached exec running the sidecar's MCP server.
type stream struct {
	// stdout carries the sidecar's MCP frames; stdin takes ours.
	// Closing stdout must unblock a pending Read: the MCP client reads it
	// on its own goroutine (LineTransport.DirectRead).
	stdout io.ReadCloser
	stdin  io.WriteCloser
	// done is closed when the sidecar's stdout has ended.
	done <-chan struct{}
	// stderr keeps the end of what the sidecar wrote to stderr.
	stderr fmt.Stringer
	// closeFn releases the stream; it is called once.
	closeFn func() error
	once    sync.Once
}

func (s *stream) dead() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Close releases the stream (idempotent).
func (s *stream) Close() error {
	var err error
	s.once.Do(func() { err = s.closeFn() })
	return err
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
