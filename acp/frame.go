package acp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxFrameBytes is the frame limit used when Policy.MaxFrameBytes is
// zero: 32 MiB, the limit of the ACP SDKs themselves.
const DefaultMaxFrameBytes = 32 << 20

const (
	// readChunk is the smallest amount of free buffer space offered to Read:
	// large enough that a busy stream is read in few system calls.
	readChunk = 256 << 10
	// headBytes is how much of an oversize frame is kept to look for its id.
	headBytes = 64 << 10
	// maxEmptyReads bounds Read calls that return neither data nor error.
	maxEmptyReads = 100
)

// ErrFrameTooLarge matches a *FrameTooLargeError with errors.Is.
var ErrFrameTooLarge = errors.New("frame too large")

// FrameTooLargeError reports a frame longer than the reader's limit. The
// frame has been consumed and discarded; the reader can go on with the next
// frame.
type FrameTooLargeError struct {
	// Size is the frame's length in bytes, not counting its "\n".
	Size int64
	// Limit is the reader's limit (acp.max_frame_bytes).
	Limit int
	// Head holds the frame's first bytes (at most 64 KiB), for finding its id.
	Head []byte
}

// Error names the size, the limit and the setting that raises it.
func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("acp: frame of %d bytes exceeds the limit of %d bytes; raise acp.max_frame_bytes if the peer really sends messages this large",
		e.Size, e.Limit)
}

// Is reports whether target is ErrFrameTooLarge.
func (e *FrameTooLargeError) Is(target error) bool { return target == ErrFrameTooLarge }

// FrameReader reads newline-delimited frames from a stream. It reassembles
// frames split across reads and never holds more than the limit plus one
// read chunk (256 KiB) in memory, however long a line the peer sends.
// A FrameReader is not safe for concurrent use.
type FrameReader struct {
	r          io.Reader
	max        int
	buf        []byte
	start, end int   // unread data is buf[start:end]
	scanned    int   // bytes of buf[start:end] known to hold no '\n'
	err        error // sticky error from r
}

// NewFrameReader returns a reader of frames from r. A maxFrameBytes of zero
// or less means DefaultMaxFrameBytes.
func NewFrameReader(r io.Reader, maxFrameBytes int) *FrameReader {
	if maxFrameBytes <= 0 {
		maxFrameBytes = DefaultMaxFrameBytes
	}
	return &FrameReader{r: r, max: maxFrameBytes}
}

// Next returns the next frame including its "\n" (and a "\r" before it, if
// any). A last frame that the stream ends without a "\n" is returned as it
// is. The slice is only valid until the next call.
//
// A frame longer than the limit yields a *FrameTooLargeError; the reader
// stays usable. At the end of the stream Next returns io.EOF; any other read
// error is returned as is, after frames already complete in the buffer.
func (fr *FrameReader) Next() ([]byte, error) {
	empty := 0
	for {
		if i := bytes.IndexByte(fr.buf[fr.start+fr.scanned:fr.end], '\n'); i >= 0 {
			n := fr.start + fr.scanned + i + 1
			frame := fr.buf[fr.start:n]
			fr.start, fr.scanned = n, 0
			if len(frame)-1 > fr.max {
				return nil, fr.tooLarge(frame[:len(frame)-1], int64(len(frame)-1))
			}
			return frame, nil
		}
		fr.scanned = fr.end - fr.start
		if fr.scanned > fr.max {
			return nil, fr.discard()
		}
		if fr.err != nil {
			if fr.start < fr.end && fr.err == io.EOF {
				frame := fr.buf[fr.start:fr.end]
				fr.start, fr.scanned = fr.end, 0
				return frame, nil
			}
			fr.start, fr.end, fr.scanned = 0, 0, 0
			return nil, fr.err
		}
		n := fr.fill()
		if n == 0 && fr.err == nil {
			if empty++; empty >= maxEmptyReads {
				fr.err = io.ErrNoProgress
			}
		}
	}
}

// Buffered reports whether Next would return a frame without reading: a
// complete frame is already in the buffer. A caller that batches its
// output flushes when it is false, before Next may block.
func (fr *FrameReader) Buffered() bool {
	if i := bytes.IndexByte(fr.buf[fr.start+fr.scanned:fr.end], '\n'); i >= 0 {
		fr.scanned += i // the bytes before the '\n' hold none: Next finds it at once
		return true
	}
	fr.scanned = fr.end - fr.start
	return false
}

// fill reads once into the buffer, first making room for at least readChunk
// bytes. The buffer never grows beyond max+readChunk.
func (fr *FrameReader) fill() int {
	if fr.start > 0 {
		copy(fr.buf, fr.buf[fr.start:fr.end])
		fr.end -= fr.start
		fr.start = 0
	}
	if want := fr.end + readChunk; want > len(fr.buf) {
		size := min(max(2*len(fr.buf), want), fr.max+readChunk)
		nb := make([]byte, size)
		copy(nb, fr.buf[:fr.end])
		fr.buf = nb
	}
	n, err := fr.r.Read(fr.buf[fr.end:])
	fr.end += n
	if err != nil {
		fr.err = err
	}
	return n
}

// tooLarge builds the error for an oversize frame whose first bytes are in
// data.
func (fr *FrameReader) tooLarge(data []byte, size int64) *FrameTooLargeError {
	head := bytes.Clone(data[:min(len(data), headBytes)])
	return &FrameTooLargeError{Size: size, Limit: fr.max, Head: head}
}

// discard drops the current oversize frame, reading on until its "\n" or
// the end of the stream, using only the existing buffer.
func (fr *FrameReader) discard() error {
	e := fr.tooLarge(fr.buf[fr.start:fr.end], int64(fr.end-fr.start))
	fr.start, fr.end, fr.scanned = 0, 0, 0
	empty := 0
	for fr.err == nil {
		n, err := fr.r.Read(fr.buf)
		if i := bytes.IndexByte(fr.buf[:n], '\n'); i >= 0 {
			e.Size += int64(i)
			fr.start, fr.end = i+1, n
			if err != nil {
				fr.err = err
			}
			return e
		}
		e.Size += int64(n)
		if err != nil {
			fr.err = err
		}
		if n == 0 && err == nil {
			if empty++; empty >= maxEmptyReads {
				fr.err = io.ErrNoProgress
			}
		}
	}
	return e
}
