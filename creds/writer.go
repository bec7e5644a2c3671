package creds

import (
	"io"
	"sync"
)

// RedactingWriter masks a Redactor's secrets in a byte stream (an agent's
// stderr) before it reaches the writer below. A secret split across Write
// calls is masked too: the writer holds back the end of a write while it
// could still be the start of a secret, at most the longest secret's
// length less one byte, and writes it when the stream continues or on
// Close. Its output equals Redact applied to the whole stream. It is safe
// for concurrent use.
type RedactingWriter struct {
	w io.Writer
	r *Redactor

	mu      sync.Mutex
	pending []byte
	out     []byte
	err     error
}

// NewRedactingWriter returns a writer that masks r's secrets on their way
// to w. A nil r masks nothing.
func NewRedactingWriter(w io.Writer, r *Redactor) *RedactingWriter {
	return &RedactingWriter{w: w, r: r}
}

// Write masks p (with the bytes held from earlier writes) and passes on
// everything that can no longer be part of a secret. It reports len(p)
// unless the writer below failed.
func (rw *RedactingWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.err != nil {
		return 0, rw.err
	}
	m := rw.r.matcher()
	if m == nil && len(rw.pending) == 0 {
		if _, err := rw.w.Write(p); err != nil {
			rw.err = err
			return 0, err
		}
		return len(p), nil
	}
	var s string
	if len(rw.pending) == 0 {
		s = string(p)
	} else {
		rw.pending = append(rw.pending, p...)
		s = string(rw.pending)
	}
	if err := rw.emit(m, s, false); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close writes the bytes still held back. It does not close the writer
// below; later writes pass straight on.
func (rw *RedactingWriter) Close() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.err != nil || len(rw.pending) == 0 {
		return rw.err
	}
	return rw.emit(rw.r.matcher(), string(rw.pending), true)
}

// emit masks s, writes what is settled and keeps the rest pending.
func (rw *RedactingWriter) emit(m *matcher, s string, final bool) error {
	var out []byte
	held := 0
	if m != nil {
		out, held = m.redact(rw.out[:0], s, final)
	}
	if out == nil && held == 0 {
		out = append(rw.out[:0], s...)
	}
	rest := s[len(s)-held:]
	rw.pending = append(rw.pending[:0], rest...)
	if cap(out) <= 64<<10 {
		rw.out = out[:0]
	}
	if len(out) == 0 {
		return nil
	}
	if _, err := rw.w.Write(out); err != nil {
		rw.err = err
		return err
	}
	return nil
}
