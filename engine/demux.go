package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/docker/docker/pkg/stdcopy"
)

// maxSystemErrBytes bounds the engine's own error message read from a
// multiplexed stream; the rest of an overlong message is skipped.
const maxSystemErrBytes = 4 << 10

// demuxBuffer is the size of a DemuxReader's read buffer: one read from
// the stream takes in several frames, headers and all, as stdcopy.StdCopy
// does, instead of one read for each 8-byte header and more for its
// payload.
const demuxBuffer = 32 << 10

// streamDemuxBuffer is the read buffer of an ExecStream, which carries
// bulk protocol traffic: engines send at most 8 KiB (Podman) or 32 KiB
// (Docker) per frame, and 256 KiB lets one read take in what a busy stream
// has queued and one Read hand all of it on.
const streamDemuxBuffer = 256 << 10

// DemuxReader reads the stdout bytes of a multiplexed (non-TTY) attach
// stream and writes its stderr frames to a writer as it meets them. It
// does what stdcopy.StdCopy does, but pulled by the reader: no copying
// goroutine and no pipe between the stream and whoever consumes stdout,
// which saves a hand-off per message on request/response streams.
//
// It reads the stream through a bounded buffer (32 KiB) so that a read
// brings in whole frames with their headers; a payload at least that large
// is read straight into the caller's slice. A Read returns the stdout
// bytes of every frame already in the buffer, as far as they fit, not one
// frame's.
//
// Frames of the stdin stream are read as stdout, as StdCopy does; an
// engine error frame (stream 3) ends the stream with its message. A
// DemuxReader is not safe for concurrent use.
type DemuxReader struct {
	r      io.Reader
	stderr io.Writer
	size   int    // of buf
	buf    []byte // allocated on first read
	bs, be int    // buffered, unread bytes are buf[bs:be]
	stream stdcopy.StdType
	left   int   // payload bytes left in the current frame
	rerr   error // the stream's read error, once it has failed or ended
	err    error // what Read returns once the buffer cannot go on
}

// NewDemuxReader returns a reader of the stdout bytes of r; stderr frames
// go to stderr (nil discards them).
func NewDemuxReader(r io.Reader, stderr io.Writer) *DemuxReader {
	return newDemuxReaderSize(r, stderr, demuxBuffer)
}

// newDemuxReaderSize is NewDemuxReader with a read buffer of size bytes.
func newDemuxReaderSize(r io.Reader, stderr io.Writer, size int) *DemuxReader {
	if stderr == nil {
		stderr = io.Discard
	}
	return &DemuxReader{r: r, stderr: stderr, size: size}
}

// Read reads stdout payload into p. It returns io.EOF at a clean end of
// the stream (between frames) and io.ErrUnexpectedEOF inside one.
func (d *DemuxReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if d.buf == nil {
		d.buf = make([]byte, d.size)
	}
	for d.err == nil {
		if d.left == 0 {
			d.readHeader()
			continue
		}
		n := d.payload(p)
		if n == 0 {
			continue
		}
		if d.stream != stdcopy.Stderr {
			// stdout, or stdin read as stdout; with what else is buffered
			return n + d.take(p[n:]), nil
		}
		// p is free until stdout bytes arrive: it carried stderr.
		if _, werr := d.stderr.Write(p[:n]); werr != nil {
			d.err = fmt.Errorf("writing stderr: %w", werr)
		}
	}
	return 0, d.err
}

// take moves into p the stdout bytes the buffer already holds, going
// past whole headers and stderr payload there, without reading the
// stream. It stops at an engine error frame or an unknown stream (the next
// Read reports it) and at a failed stderr write (d.err is set).
func (d *DemuxReader) take(p []byte) int {
	n := 0
	for n < len(p) && d.err == nil {
		if d.left == 0 {
			if d.buffered() < 8 || stdcopy.StdType(d.buf[d.bs]) > stdcopy.Stderr {
				break
			}
			d.readHeader() // reads nothing: the header is buffered
			continue
		}
		k := min(d.left, d.buffered())
		if k == 0 {
			break
		}
		if d.stream == stdcopy.Stderr {
			if _, err := d.stderr.Write(d.buf[d.bs : d.bs+k]); err != nil {
				d.err = fmt.Errorf("writing stderr: %w", err)
			}
		} else {
			k = copy(p[n:], d.buf[d.bs:d.bs+k])
			n += k
		}
		d.bs += k
		d.left -= k
	}
	return n
}

// buffered is how many unread bytes the buffer holds.
func (d *DemuxReader) buffered() int { return d.be - d.bs }

// payload moves up to len(p) bytes of the current frame into p: from the
// buffer, or, with the buffer empty and a large frame, straight from the
// stream. It returns 0 when it got nothing this time; d.err is set when
// nothing more will come.
func (d *DemuxReader) payload(p []byte) int {
	want := min(len(p), d.left)
	switch {
	case d.buffered() > 0:
		n := copy(p[:want], d.buf[d.bs:d.be])
		d.bs += n
		d.left -= n
		return n
	case d.rerr != nil:
		d.end(true)
		return 0
	case want >= len(d.buf):
		n, err := d.r.Read(p[:want])
		d.left -= n
		if err != nil {
			d.rerr = err
		}
		return n
	}
	d.fill()
	return 0
}

// fill reads once from the stream into the buffer, after what it holds.
func (d *DemuxReader) fill() {
	if d.bs > 0 {
		d.be = copy(d.buf, d.buf[d.bs:d.be])
		d.bs = 0
	}
	n, err := d.r.Read(d.buf[d.be:])
	d.be += n
	if err != nil {
		d.rerr = err
	}
}

// end sets d.err from the stream's read error: an end of the stream inside
// a frame (or inside a header) is unexpected.
func (d *DemuxReader) end(inside bool) {
	if d.rerr == io.EOF && inside {
		d.err = io.ErrUnexpectedEOF
		return
	}
	d.err = d.rerr
}

// readHeader takes a frame header from the buffer, reading the stream as
// needed; on failure it sets d.err.
func (d *DemuxReader) readHeader() {
	const hdrLen = 8
	for d.buffered() < hdrLen {
		if d.rerr != nil {
			d.end(d.buffered() > 0)
			return
		}
		d.fill()
	}
	hdr := d.buf[d.bs : d.bs+hdrLen]
	d.bs += hdrLen
	d.stream = stdcopy.StdType(hdr[0])
	d.left = int(binary.BigEndian.Uint32(hdr[4:]))
	switch {
	case d.stream == stdcopy.Systemerr:
		d.readSystemErr() // even an empty one ends the stream
	case d.stream > stdcopy.Systemerr:
		d.err = fmt.Errorf("unrecognized stream header %d in the engine's output", hdr[0])
	}
}

// readSystemErr reads an engine error frame and ends the stream with it;
// only its first maxSystemErrBytes are kept.
func (d *DemuxReader) readSystemErr() {
	msg := make([]byte, 0, min(d.left, maxSystemErrBytes))
	for d.left > 0 {
		if d.buffered() == 0 {
			if d.rerr != nil {
				d.end(true)
				return
			}
			d.fill()
			continue
		}
		n := min(d.left, d.buffered())
		keep := min(n, cap(msg)-len(msg))
		msg = append(msg, d.buf[d.bs:d.bs+keep]...)
		d.bs += n
		d.left -= n
	}
	d.err = errors.New("error from the engine in the stream: " + string(msg))
}
