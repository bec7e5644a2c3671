package hostflow

import (
	"io"
	"sync"
)

// stdinBuffer is the bound of the pipe that carries the client's frames to
// the server's stdin.
const stdinBuffer = 64 << 10

// batchPipe is a bounded in-memory pipe. Unlike io.Pipe, a write returns
// once its bytes are buffered, and a read takes everything buffered (up to
// the reader's buffer), so frames written one by one while the exec stream
// is busy reach the engine in one write instead of one write each. Nothing
// waits for more input: a reader that is waiting gets a frame as soon as it
// is written. A full buffer blocks writers, so back-pressure still reaches
// the client.
type batchPipe struct {
	mu      sync.Mutex
	cond    *sync.Cond
	buf     []byte
	max     int
	wclosed bool  // no more writes: readers get EOF once the buffer drains
	rerr    error // the reader is gone: writes fail with it
}

func newBatchPipe(max int) *batchPipe {
	p := &batchPipe{buf: make([]byte, 0, max), max: max}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// Write buffers b, waiting while the buffer is full.
func (p *batchPipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for len(b) > 0 {
		for len(p.buf) == p.max && p.rerr == nil && !p.wclosed {
			p.cond.Wait()
		}
		switch {
		case p.rerr != nil:
			return n, p.rerr
		case p.wclosed:
			return n, io.ErrClosedPipe
		}
		take := min(len(b), p.max-len(p.buf))
		p.buf = append(p.buf, b[:take]...)
		b = b[take:]
		n += take
		p.cond.Broadcast()
	}
	return n, nil
}

// Read returns what is buffered, waiting while nothing is; io.EOF once the
// write side is closed and the buffer is drained.
func (p *batchPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.buf) == 0 && !p.wclosed && p.rerr == nil {
		p.cond.Wait()
	}
	if p.rerr != nil {
		return 0, io.ErrClosedPipe
	}
	if len(p.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(b, p.buf)
	rest := copy(p.buf, p.buf[n:])
	p.buf = p.buf[:rest]
	p.cond.Broadcast()
	return n, nil
}

// CloseWrite ends the stream: the reader gets io.EOF after the buffered bytes.
func (p *batchPipe) CloseWrite() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wclosed = true
	p.cond.Broadcast()
	return nil
}

// CloseRead abandons the stream: buffered bytes are dropped and writes fail
// with err.
func (p *batchPipe) CloseRead(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rerr == nil {
		p.rerr = err
	}
	p.buf = p.buf[:0]
	p.cond.Broadcast()
}
