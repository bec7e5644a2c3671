package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/podbot/podbot/errdefs"
)

const (
	// copyBuffer is the buffer size of each direction in pass-through mode;
	// with batchBytes it keeps the write system calls per MiB few (at 32 KiB
	// the pass-through ran at 0.6-0.7 of a raw exec).
	copyBuffer = 256 << 10
	// batchBytes bounds the unchanged frames a pump writes at once.
	batchBytes = 256 << 10
)

// Bridge copies protocol frames from clientIn to agentStdin and from
// agentStdout to clientOut, applying p. It uses one goroutine per direction
// and holds at most one frame (bounded by p.MaxFrameBytes) per direction, so
// a slow reader on either side slows the writer on the other.
//
// Answers podbot writes itself are serialized with forwarded frames, so
// frames never interleave on either writer. When clientIn ends, Bridge
// half-closes agentStdin if it has a CloseWrite() error method, and goes on
// until the agent's output ends.
//
// Bridge returns nil when agentStdout ends, the error that stopped reading
// clientIn or agentStdout or writing clientOut, or ctx.Err() when ctx ends
// first. A failed write to agentStdin (usually the agent exiting) stops the
// client direction and is logged; Bridge then waits for the agent's output
// to end. Reads cannot be interrupted: on return the caller closes the
// streams, which ends a direction still blocked in Read.
func Bridge(ctx context.Context, p Policy, clientIn io.Reader, agentStdin io.Writer, agentStdout io.Reader, clientOut io.Writer) error {
	if err := p.Validate(); err != nil {
		return err
	}
	log := p.logger()
	if w := p.TrustBoundaryWarning(); w != "" {
		log.WarnContext(ctx, w)
	} else if p.Mode == ModeCodexAppServer && !p.CodexBlockDynamicTools {
		log.InfoContext(ctx, "codex app-server: forwarding all frames unmodified; dynamic tools (item/tool/call) run on the client's host unless agent.codex_block_dynamic_tools is set")
	}

	toAgent := &frameWriter{w: agentStdin}
	toClient := &frameWriter{w: clientOut}
	var up, down func() error
	if p.passThrough() {
		up = func() error { return copyRaw(agent, toAgent, clientIn) }
		down = func() error { return copyRaw(client, toClient, agentStdout) }
	} else {
		f := newFilter(p)
		up = func() error { return pump(ctx, f, client, clientIn, toAgent, toClient, p.maxFrame()) }
		down = func() error { return pump(ctx, f, agent, agentStdout, toClient, toAgent, p.maxFrame()) }
	}

	upDone := make(chan error, 1)
	downDone := make(chan error, 1)
	go func() {
		err := up()
		if err == nil {
			err = toAgent.closeWrite()
		}
		upDone <- err
	}()
	go func() { downDone <- down() }()

	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-downDone:
			return err
		case err := <-upDone:
			upDone = nil
			var we *writeError
			switch {
			case errors.As(err, &we):
				log.DebugContext(ctx, "protocol bridge: the agent's input closed", "err", we.err)
			case err != nil:
				return err
			}
		}
	}
}

// pump moves frames from src (sent by from) through f, forwarding to dst
// and answering to back. Frames forwarded one after another while more
// complete frames are already buffered go out in one write (up to
// batchBytes; a larger frame goes alone); nothing waits for more input: the
// pending frames are written before the next read.
//
// Frames the policy forwards unchanged are written straight from the
// reader's buffer while they lie next to each other there; only after a
// frame is dropped or rewritten are the frames gathered by copying.
func pump(ctx context.Context, f *filter, from peer, src io.Reader, dst, back *frameWriter, maxFrame int) error {
	fr := NewFrameReader(src, maxFrame)
	out := pending{write: func(p []byte) error {
		if err := dst.write(p); err != nil {
			return &writeError{to: other(from), err: err}
		}
		return nil
	}}
	for {
		frame, err := fr.Next()
		var v verdict
		switch e, tooLarge := asTooLarge(err); {
		case err == nil:
			v = f.frame(ctx, from, frame)
		case tooLarge:
			v = f.oversize(ctx, from, e)
		case err == io.EOF:
			return out.flush()
		default:
			if ferr := out.flush(); ferr != nil {
				return ferr
			}
			return readError(from, err)
		}
		if v.forward != nil {
			if err := out.add(v.forward, unchanged(v.forward, frame)); err != nil {
				return err
			}
		}
		if v.reply != nil {
			if err := back.write(v.reply); err != nil {
				// The sender's own stream failed; its direction reports it.
				f.log.WarnContext(ctx, "protocol bridge: could not deliver podbot's answer",
					"to", from.String(), "err", err)
			}
		}
		if !fr.Buffered() {
			// The next Next may read, which moves the reader's buffer.
			if err := out.flush(); err != nil {
				return err
			}
		}
	}
}

// pending holds the frames a pump has yet to write: either a span of the
// frame reader's buffer (frames forwarded unchanged and adjacent there) or
// a batch of copies.
type pending struct {
	write func([]byte) error
	// span is a slice of the reader's buffer; its capacity reaches to the
	// buffer's end. Empty while batch is in use.
	span  []byte
	batch []byte
}

// add queues p, which is the reader's frame itself when inPlace, flushing
// first when the pending frames and p together exceed batchBytes.
func (q *pending) add(p []byte, inPlace bool) error {
	if len(q.span)+len(q.batch)+len(p) > batchBytes {
		if err := q.flush(); err != nil {
			return err
		}
	}
	switch {
	case len(p) >= batchBytes:
		return q.write(p)
	case inPlace && len(q.batch) == 0 && len(q.span) == 0:
		q.span = p
	case inPlace && len(q.batch) == 0 && follows(q.span, p):
		q.span = q.span[:len(q.span)+len(p)]
	default:
		if q.batch == nil {
			q.batch = make([]byte, 0, batchBytes)
		}
		q.batch = append(append(q.batch, q.span...), p...)
		q.span = nil
	}
	return nil
}

// flush writes the pending frames.
func (q *pending) flush() error {
	p := q.span
	if len(q.batch) > 0 {
		p = q.batch
	}
	q.span, q.batch = nil, q.batch[:0]
	if len(p) == 0 {
		return nil
	}
	return q.write(p)
}

// unchanged reports whether out is frame itself, not a rewritten copy.
func unchanged(out, frame []byte) bool {
	return len(out) == len(frame) && len(frame) > 0 && &out[0] == &frame[0]
}

// follows reports whether frame starts in the same buffer right where span
// ends, so that span can grow over it.
func follows(span, frame []byte) bool {
	n := len(span)
	return n > 0 && cap(span)-n >= len(frame) && &span[:n+1][n] == &frame[0]
}

// copyRaw copies src to dst (the peer to) unmodified through a bounded
// buffer.
func copyRaw(to peer, dst *frameWriter, src io.Reader) error {
	buf := make([]byte, copyBuffer)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if werr := dst.write(buf[:n]); werr != nil {
				return &writeError{to: to, err: werr}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return readError(other(to), err)
		}
	}
}

func other(p peer) peer {
	if p == client {
		return agent
	}
	return client
}

// readError classifies a failed read: the agent's side is the container
// engine's exec stream.
func readError(from peer, err error) error {
	if from == agent {
		return &errdefs.ContainerError{Op: "protocol bridge", Reason: errdefs.ErrExecFailed,
			Msg: "reading the agent's output failed", Err: err}
	}
	return fmt.Errorf("protocol bridge: reading the client's input: %w", err)
}

// writeError is a failed write to a peer.
type writeError struct {
	to  peer
	err error
}

func (e *writeError) Error() string {
	return fmt.Sprintf("protocol bridge: writing to the %s: %v", e.to, e.err)
}

func (e *writeError) Unwrap() error { return e.err }

// frameWriter serializes whole frames onto one writer.
type frameWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

// errWriteClosed is returned for a write after closeWrite.
var errWriteClosed = errors.New("stream already half-closed")

// write writes one whole frame.
func (w *frameWriter) write(p []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errWriteClosed
	}
	_, err := w.w.Write(p)
	return err
}

// closeWrite half-closes the writer if it supports it; later writes fail.
func (w *frameWriter) closeWrite() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if cw, ok := w.w.(interface{ CloseWrite() error }); ok {
		if err := cw.CloseWrite(); err != nil {
			return &writeError{to: agent, err: err}
		}
	}
	return nil
}
