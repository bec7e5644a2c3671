package acp

// maxRetired bounds the buffers a direction's reader has handed on and its
// writer has not yet written (read buffers it left, batches, rewritten
// frames over batchBytes). With the reader's own buffer and batch, a
// direction holds at most maxRetired+2 buffers: 2 MiB at the default sizes,
// and never two larger than retireBuffer (see FrameReader.retire).
const maxRetired = 2

// queued is one hand-off from a pump's reader to its writer: bytes to
// write, what to give back once they (and everything before them) are
// written, or a barrier to close.
type queued struct {
	p []byte
	// free goes back to the pool's spares once written.
	free []byte
	// counted returns a maxRetired token once written.
	counted bool
	// barrier is closed once everything before it is written.
	barrier chan struct{}
}

// writeQueue runs a pump's writes in their own goroutine, so that the
// pump's reader reads and checks the next frames while the last ones are
// being written. Order is kept (one FIFO); memory is bounded by tokens
// (maxRetired) and by the channel's capacity, whose items other than
// tokened ones only point into the reader's current buffer.
type writeQueue struct {
	items  chan queued
	tokens chan struct{}
	// spares holds read buffers the writer is done with, for reuse.
	spares chan []byte
	// failed is closed when a write failed; err says why.
	failed chan struct{}
	err    error
	// done is closed when the writer goroutine has returned.
	done   chan struct{}
	closed bool
	// spareSize is the length of a reusable read buffer.
	spareSize int
}

// newWriteQueue starts a writer goroutine that calls write for each batch
// in order. spareSize is the length of the read buffers it recycles.
func newWriteQueue(write func([]byte) error, spareSize int) *writeQueue {
	q := &writeQueue{
		items:     make(chan queued, 8),
		tokens:    make(chan struct{}, maxRetired),
		spares:    make(chan []byte, maxRetired),
		failed:    make(chan struct{}),
		done:      make(chan struct{}),
		spareSize: spareSize,
	}
	go q.run(write)
	return q
}

// run is the writer goroutine. It stops at the first failed write, which
// releases a reader waiting on the queue.
func (q *writeQueue) run(write func([]byte) error) {
	defer close(q.done)
	for it := range q.items {
		if len(it.p) > 0 {
			if err := write(it.p); err != nil {
				q.err = err
				close(q.failed)
				return
			}
		}
		if it.free != nil && len(it.free) == q.spareSize {
			select {
			case q.spares <- it.free:
			default:
			}
		}
		if it.counted {
			<-q.tokens
		}
		if it.barrier != nil {
			close(it.barrier)
		}
	}
}

// send queues it; a counted item first waits for a token. It returns the
// writer's error if the writer has stopped.
func (q *writeQueue) send(it queued) error {
	if it.counted {
		select {
		case q.tokens <- struct{}{}:
		case <-q.failed:
			return q.err
		}
	}
	select {
	case q.items <- it:
		return nil
	case <-q.failed:
		return q.err
	}
}

// drain waits until everything queued so far is written.
func (q *writeQueue) drain() error {
	b := make(chan struct{})
	if err := q.send(queued{barrier: b}); err != nil {
		return err
	}
	select {
	case <-b:
		return nil
	case <-q.failed:
		return q.err
	}
}

// spare returns a read buffer of spareSize bytes: one the writer is done
// with, or a new one.
func (q *writeQueue) spare() []byte {
	select {
	case b := <-q.spares:
		return b
	default:
		return make([]byte, q.spareSize)
	}
}

// close ends the queue once everything queued is written and returns the
// writer's error, if a write failed.
func (q *writeQueue) close() error {
	if !q.closed {
		q.closed = true
		close(q.items)
	}
	<-q.done
	return q.err
}

// retire is the FrameReader's retire hook for a pump: the old buffer goes
// back after what was queued from it is written, and tail unread bytes
// continue in a spare buffer. A tail too long for a spare (a large frame
// being assembled) waits for the writer to catch up instead and returns
// nil, so the reader keeps its buffer: at most one buffer per direction is
// ever larger than spareSize.
func (q *writeQueue) retire(old []byte, tail int) ([]byte, error) {
	if tail+readChunk > q.spareSize {
		return nil, q.drain()
	}
	if err := q.send(queued{free: old, counted: true}); err != nil {
		return nil, err
	}
	return q.spare(), nil
}
