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

// DemuxReader reads the stdout bytes of a multiplexed (non-TTY) attach
// stream and writes its stderr frames to a writer as it meets them. It
// does what stdcopy.StdCopy does, but pulled by the reader: no copying
// goroutine and no pipe between the stream and whoever consumes stdout,
// which saves a hand-off per message on request/response streams.
//
// Frames of the stdin stream are read as stdout, as StdCopy does; an
// engine error frame (stream 3) ends the stream with its message. A
// DemuxReader is not safe for concurrent use.
type DemuxReader struct {
	r      io.Reader
	stderr io.Writer
	hdr    [8]byte
	hdrN   int
	stream stdcopy.StdType
	left   int // payload bytes left in the current frame
	err    error
}

// NewDemuxReader returns a reader of the stdout bytes of r; stderr frames
// go to stderr (nil discards them).
func NewDemuxReader(r io.Reader, stderr io.Writer) *DemuxReader {
	if stderr == nil {
		stderr = io.Discard
	}
	return &DemuxReader{r: r, stderr: stderr}
}

// Read reads stdout payload into p. It returns io.EOF at a clean end of
// the stream (between frames) and io.ErrUnexpectedEOF inside one.
func (d *DemuxReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for d.err == nil {
		if d.left == 0 {
			d.readHeader()
			continue
		}
		switch d.stream {
		case stdcopy.Stdin, stdcopy.Stdout:
			n, err := d.r.Read(p[:min(len(p), d.left)])
			d.left -= n
			d.setErr(err)
			if n > 0 {
				return n, nil
			}
		case stdcopy.Stderr:
			// p is free until stdout bytes arrive: use it for stderr.
			n, err := d.r.Read(p[:min(len(p), d.left)])
			d.left -= n
			if n > 0 {
				if _, werr := d.stderr.Write(p[:n]); werr != nil && err == nil {
					err = fmt.Errorf("writing stderr: %w", werr)
				}
			}
			d.setErr(err)
		}
	}
	return 0, d.err
}

// readHeader reads (the rest of) a frame header.
func (d *DemuxReader) readHeader() {
	for d.hdrN < len(d.hdr) && d.err == nil {
		n, err := d.r.Read(d.hdr[d.hdrN:])
		d.hdrN += n
		if err == io.EOF && d.hdrN == 0 {
			d.err = io.EOF
			return
		}
		d.setErr(err)
	}
	if d.hdrN < len(d.hdr) {
		return
	}
	d.hdrN = 0
	d.stream = stdcopy.StdType(d.hdr[0])
	d.left = int(binary.BigEndian.Uint32(d.hdr[4:]))
	switch {
	case d.stream == stdcopy.Systemerr:
		d.readSystemErr() // even an empty one ends the stream
	case d.stream > stdcopy.Systemerr:
		d.err = fmt.Errorf("unrecognized stream header %d in the engine's output", d.hdr[0])
	}
}

// readSystemErr reads an engine error frame and ends the stream with it.
func (d *DemuxReader) readSystemErr() {
	msg := make([]byte, min(d.left, maxSystemErrBytes))
	n, err := io.ReadFull(d.r, msg)
	d.left -= n
	if err == nil && d.left > 0 {
		_, err = io.CopyN(io.Discard, d.r, int64(d.left))
	}
	if err != nil {
		d.setErr(err)
		return
	}
	d.err = errors.New("error from the engine in the stream: " + string(msg[:n]))
}

// setErr records a read error; EOF inside a frame is unexpected.
func (d *DemuxReader) setErr(err error) {
	if err == nil || d.err != nil {
		return
	}
	if err == io.EOF && (d.left > 0 || d.hdrN > 0) {
		err = io.ErrUnexpectedEOF
	}
	d.err = err
}
