package engine

import (
	"context"
	"io"
	"sync"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"

	"github.com/podbot/podbot/errdefs"
)

// StreamOptions describes a protocol-mode exec (no TTY, stdin attached)
// whose streams the caller drives; see ExecStream.
type StreamOptions struct {
	// Cmd is the command and its arguments; it must not be empty.
	Cmd []string
	// Env holds KEY=VALUE pairs added to the container's environment.
	Env []string
	// WorkDir and User override the container's defaults when set.
	WorkDir, User string
	// Stderr receives the command's stderr bytes as the stdout reader
	// meets them; nil discards them.
	Stderr io.Writer
}

// ExecStream is a started protocol-mode exec. Read returns the command's
// stdout bytes, demultiplexed as they are read: no copying goroutine and no
// pipe sit between the engine's stream and the reader, and one Read
// returns what up to 256 KiB of the stream already received holds. Write sends to the
// command's stdin straight onto the engine's stream; CloseWrite half-closes
// it so the command sees EOF. Once Read has returned an error, Wait returns
// the exit status. Close ends the stream at any time. Read and Write may be
// called from different goroutines; neither is safe for concurrent use by
// several readers or several writers.
type ExecStream struct {
	c           *Conn
	containerID string
	execID      string
	hr          types.HijackedResponse
	stdout      *DemuxReader
	stop        func() bool
	closeOnce   sync.Once
}

// ExecStream starts opts.Cmd in a running container and returns its
// streams. The stream is closed when ctx ends.
func (c *Conn) ExecStream(ctx context.Context, containerID string, opts StreamOptions) (*ExecStream, error) {
	if err := validateExec(ExecOptions{Cmd: opts.Cmd, Env: opts.Env}); err != nil {
		return nil, &errdefs.ContainerError{Op: "exec", Endpoint: c.ep.String(), Container: containerID, Reason: errdefs.ErrInvalidValue, Msg: err.Error()}
	}
	resp, err := c.api.ContainerExecCreate(ctx, containerID, container.ExecOptions{
		User: opts.User, AttachStdin: true, AttachStdout: true, AttachStderr: true,
		Env: opts.Env, WorkingDir: opts.WorkDir, Cmd: opts.Cmd,
	})
	if err != nil {
		return nil, c.classify("exec", containerID, err)
	}
	hr, err := c.api.ContainerExecAttach(ctx, resp.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, c.classify("exec", containerID, err)
	}
	s := &ExecStream{c: c, containerID: containerID, execID: resp.ID, hr: hr,
		stdout: newDemuxReaderSize(hr.Reader, opts.Stderr, streamDemuxBuffer)}
	s.stop = context.AfterFunc(ctx, func() { hr.Close() })
	return s, nil
}

// Read reads the command's stdout; io.EOF when its output has ended.
func (s *ExecStream) Read(p []byte) (int, error) { return s.stdout.Read(p) }

// Write writes to the command's stdin.
func (s *ExecStream) Write(p []byte) (int, error) { return s.hr.Conn.Write(p) }

// CloseWrite half-closes the command's stdin.
func (s *ExecStream) CloseWrite() error { return s.hr.CloseWrite() }

// Wait returns the command's clamped exit status once the engine reports
// it finished (call it after Read has ended).
func (s *ExecStream) Wait(ctx context.Context) (int, error) {
	return s.c.execExitCode(ctx, s.containerID, s.execID)
}

// Close closes the engine's stream, which ends a blocked Read or Write.
func (s *ExecStream) Close() error {
	s.closeOnce.Do(func() {
		s.stop()
		s.hr.Close()
	})
	return nil
}
