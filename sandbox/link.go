package sandbox

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"time"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/sidecarsock"
)

// How a session reaches its sidecar (Info.Link).
const (
	// LinkSocket is the sidecar's unix socket in the session's link
	// directory: no exec in the engine.
	LinkSocket = "socket"
	// LinkExec is an attached exec of podbot-sidecar serve.
	LinkExec = "exec"
)

// Sidecar link modes (ContainerOptions.SidecarLink).
const (
	// SidecarLinkAuto uses the socket when the sandbox has one, else an exec.
	SidecarLinkAuto = "auto"
	// SidecarLinkExec always uses an exec, as podbot did before the socket.
	SidecarLinkExec = "exec"
)

// linkWait bounds how long a new container's socket may take to appear
// before the session falls back to an exec.
const linkWait = 2 * time.Second

// sessionLink is a session's link directory and key.
type sessionLink struct {
	dir   string // canonical host path of the link directory
	owner int    // uid the directory and socket must belong to
	key   []byte
}

// prepareLinkLocked makes the session's link directory with a fresh key
// for the container about to start, when the runtime can give it one; it
// returns the directory to mount, or "" for none.
func (s *Container) prepareLinkLocked() string {
	s.link = nil
	if s.copts.SidecarLink == SidecarLinkExec {
		return ""
	}
	uid, gid, ok := s.rt.linkOwner()
	if !ok {
		return ""
	}
	parent, err := filepath.EvalSymlinks(s.dir)
	if err == nil {
		var dir string
		var key []byte
		if dir, key, err = sidecarsock.Prepare(parent, uid, gid); err == nil {
			s.link = &sessionLink{dir: dir, owner: uid, key: key}
			return dir
		}
	}
	s.logger.Warn("cannot prepare the sidecar socket directory; the session uses an exec stream", "session", s.id, "error", err)
	return ""
}

// dialLink connects to the sidecar's socket, if the session has one. For
// a container that has just started it waits (up to linkWait) for the
// socket to appear; otherwise it tries once. A socket that is not as
// podbot made it (a planted link, FIFO or file, another owner, a failed
// handshake) is never retried.
func (s *Container) dialLink(ctx context.Context, fresh bool) (*stream, error) {
	l := s.link
	if l == nil {
		return nil, &errdefs.ContainerError{Op: "dial sidecar socket", Reason: errdefs.ErrUnsupported, Msg: "the session has no sidecar socket"}
	}
	deadline := s.now().Add(linkWait)
	pause := time.Millisecond
	for {
		dctx, cancel := context.WithTimeout(ctx, sidecarsock.HandshakeTimeout)
		c, err := sidecarsock.Dial(dctx, l.dir, l.owner, l.key)
		cancel()
		if err == nil {
			return linkStream(c.(*net.UnixConn)), nil
		}
		retry := errors.Is(err, errdefs.ErrNotFound) || errors.Is(err, errdefs.ErrConnectionFailed)
		if !fresh || !retry || ctx.Err() != nil || s.now().Add(pause).After(deadline) {
			return nil, err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// linkStream wraps a connected, authenticated socket as a sidecar stream.
func linkStream(c *net.UnixConn) *stream {
	stdout := &endReader{r: c, close: func() { c.Close() }, done: make(chan struct{})}
	return &stream{
		stdout:  stdout,
		stdin:   halfCloser{hj: c, closeWrite: c.CloseWrite},
		done:    stdout.done,
		stderr:  newTailBuffer(stderrTail),
		closeFn: c.Close,
	}
}

// connectStream returns a stream to the sidecar of container id: over the
// socket when the session has one, else over a new exec. fresh says the
// container has just started (its socket may not be there yet).
func (s *Container) connectStream(ctx context.Context, id, name string, fresh bool) (*stream, string, error) {
	if s.link != nil {
		st, err := s.dialLink(ctx, fresh)
		if err == nil {
			return st, LinkSocket, nil
		}
		level := s.logger.Debug
		if errors.Is(err, errdefs.ErrRefused) || errors.Is(err, errdefs.ErrAuth) {
			level = s.logger.Warn
		}
		level("cannot use the sidecar socket; using an exec stream", "container", name, "error", err)
		if fresh && !errors.Is(err, errdefs.ErrRefused) && !errors.Is(err, errdefs.ErrAuth) {
			// The socket never appeared: the engine cannot give this
			// sandbox user the directory (a user namespace, say).
			s.rt.linkMissing()
		}
		s.link = nil
	}
	st, err := s.rt.attach(ctx, id)
	return st, LinkExec, err
}
