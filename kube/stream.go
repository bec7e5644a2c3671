package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/podbot/podbot/errdefs"
)

// Stream is one long-lived exec in a sandbox Pod with its stdin and stdout
// as pipes: what a program that speaks a protocol over a command's stdio
// (podbot-sidecar serve) needs. Its stderr is kept, bounded, for errors.
type Stream struct {
	// Stdout reads the command's stdout; it ends when the exec ends.
	Stdout io.ReadCloser
	// Stdin writes the command's stdin; Close sends its end.
	Stdin io.WriteCloser

	done   chan struct{}
	cancel context.CancelFunc
	stderr *tailWriter
	once   sync.Once
}

// Done is closed when the exec has ended.
func (s *Stream) Done() <-chan struct{} { return s.done }

// Stderr is the end of what the command wrote to stderr, and how the exec
// ended if it failed.
func (s *Stream) Stderr() string { return s.stderr.String() }

// closeGrace is how long Close waits for the command to end after its
// stdin did, before it cuts the exec.
const closeGrace = time.Second

// Close ends the exec and releases the pipes (idempotent). It first sends
// the end of stdin, on which a stdio server exits, and waits up to
// closeGrace for the exec to end by itself: cutting a live exec makes
// client-go log the broken connection on stderr.
func (s *Stream) Close() error {
	s.once.Do(func() {
		s.Stdin.Close()
		t := time.NewTimer(closeGrace)
		select {
		case <-s.done:
		case <-t.C:
		}
		t.Stop()
		s.cancel()
		s.Stdout.Close()
	})
	return nil
}

// ExecStream starts cmd in the sandbox container of Pod name with its
// stdin and stdout as the Stream's pipes, through pods/exec (WebSocket, SPDY
// as fallback). The exec outlives ctx, which bounds nothing but the
// start; Close ends it. A failure to connect shows as the end of Stdout,
// with the reason in Stderr.
func (c *Client) ExecStream(ctx context.Context, name string, cmd []string) (*Stream, error) {
	if len(cmd) == 0 {
		return nil, &errdefs.ContainerError{Op: "kubernetes exec", Container: name, Reason: errdefs.ErrInvalidValue, Msg: "no command given"}
	}
	if err := ctx.Err(); err != nil {
		return nil, c.classify("exec", name, err)
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &Stream{Stdout: outR, Stdin: inW, done: make(chan struct{}), cancel: cancel, stderr: &tailWriter{max: 8 << 10}}
	go func() {
		_, err := c.Exec(sctx, name, ExecOptions{Cmd: cmd, Stdin: eofOnClose{inR}, Stdout: outW, Stderr: s.stderr})
		if err != nil && sctx.Err() == nil {
			fmt.Fprintf(s.stderr, "\n[exec ended: %v]", err)
		}
		outW.CloseWithError(io.EOF)
		inR.Close()
		close(s.done)
	}()
	return s, nil
}

// eofOnClose reads a pipe whose reader end is closed when the exec ends
// as at its end: client-go's stdin copy then stops without logging an error.
type eofOnClose struct{ r io.Reader }

func (e eofOnClose) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if errors.Is(err, io.ErrClosedPipe) {
		err = io.EOF
	}
	return n, err
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
