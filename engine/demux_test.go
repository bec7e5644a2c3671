package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/docker/docker/pkg/stdcopy"
)

// frame builds one multiplexed frame.
func frame(stream byte, payload string) []byte {
	h := make([]byte, 8, 8+len(payload))
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(payload)))
	return append(h, payload...)
}

// chunked returns r's bytes in reads of at most n.
type chunked struct {
	r io.Reader
	n int
}

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

func TestDemuxReader(t *testing.T) {
	stream := bytes.Join([][]byte{
		frame(1, "hello "), frame(2, "warn\n"), frame(1, ""), frame(0, "stdin-as-stdout "), frame(1, "world\n"), frame(2, "bye\n"),
	}, nil)
	for _, n := range []int{1, 3, 7, 8, 9, 64, 1 << 20} {
		var stderr bytes.Buffer
		out, err := io.ReadAll(NewDemuxReader(chunked{bytes.NewReader(stream), n}, &stderr))
		if err != nil || string(out) != "hello stdin-as-stdout world\n" || stderr.String() != "warn\nbye\n" {
			t.Fatalf("chunk %d: out %q stderr %q err %v", n, out, stderr.String(), err)
		}
	}
	// Reads into a 1-byte buffer still deliver every stdout byte.
	var stderr bytes.Buffer
	out, err := io.ReadAll(iotest.OneByteReader(NewDemuxReader(bytes.NewReader(stream), &stderr)))
	if err != nil || string(out) != "hello stdin-as-stdout world\n" || stderr.String() != "warn\nbye\n" {
		t.Fatalf("one byte: out %q stderr %q err %v", out, stderr.String(), err)
	}
}

func TestDemuxReaderErrors(t *testing.T) {
	tests := []struct {
		name   string
		stream []byte
		out    string
		want   error
		msg    string
	}{
		{name: "clean end", stream: frame(1, "x"), out: "x"},
		{name: "empty", stream: nil},
		{name: "partial header", stream: frame(1, "x")[:5], want: io.ErrUnexpectedEOF},
		{name: "short payload", stream: frame(1, "hello")[:10], out: "he", want: io.ErrUnexpectedEOF},
		{name: "engine error", stream: append(frame(1, "a"), frame(3, "container gone")...), out: "a", msg: "error from the engine in the stream: container gone"},
		{name: "overlong engine error", stream: frame(3, strings.Repeat("e", 10000)), msg: "error from the engine in the stream: " + strings.Repeat("e", maxSystemErrBytes)},
		{name: "unknown stream", stream: frame(9, "x"), msg: "unrecognized stream header 9 in the engine's output"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := io.ReadAll(NewDemuxReader(bytes.NewReader(tt.stream), nil))
			if string(out) != tt.out {
				t.Errorf("out = %q, want %q", out, tt.out)
			}
			switch {
			case tt.msg != "":
				if err == nil || err.Error() != tt.msg {
					t.Errorf("err = %v, want %q", err, tt.msg)
				}
			case !errors.Is(err, tt.want) && err != tt.want:
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// errWriter fails every write.
type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errors.New("stderr sink failed") }

func TestDemuxReaderStderrWriteFails(t *testing.T) {
	_, err := io.ReadAll(NewDemuxReader(bytes.NewReader(append(frame(2, "x"), frame(1, "y")...)), errWriter{}))
	if err == nil || !strings.Contains(err.Error(), "stderr sink failed") {
		t.Fatalf("err = %v", err)
	}
}

// FuzzDemuxReader checks DemuxReader against stdcopy.StdCopy on any input
// and any read size. Both fail on an unknown stream or an engine error
// frame. Where StdCopy silently drops a frame cut short by the end of the
// stream, DemuxReader has already delivered the bytes that arrived and
// reports io.ErrUnexpectedEOF; otherwise the bytes are the same.
func FuzzDemuxReader(f *testing.F) {
	f.Add(append(frame(1, "out"), frame(2, "err")...), uint8(3))
	f.Add(frame(3, "boom"), uint8(1))
	f.Add(frame(7, "bad"), uint8(8))
	f.Add(frame(1, "cut")[:9], uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		if claimsLargeFrame(data) {
			// StdCopy allocates whatever a header claims; check only that
			// DemuxReader ends without doing so.
			_, _ = io.Copy(io.Discard, NewDemuxReader(bytes.NewReader(data), io.Discard))
			return
		}
		var wantOut, wantErr bytes.Buffer
		_, stdErr := stdcopy.StdCopy(&wantOut, &wantErr, bytes.NewReader(data))
		var gotErr bytes.Buffer
		got, err := io.ReadAll(NewDemuxReader(chunked{bytes.NewReader(data), int(chunk) + 1}, &gotErr))
		switch {
		case stdErr != nil:
			if err == nil {
				t.Fatalf("StdCopy failed (%v), DemuxReader did not", stdErr)
			}
		case err == io.ErrUnexpectedEOF:
			if !bytes.HasPrefix(got, wantOut.Bytes()) || !bytes.HasPrefix(gotErr.Bytes(), wantErr.Bytes()) {
				t.Fatalf("cut stream: stdout %q does not extend %q or stderr %q does not extend %q", got, wantOut.Bytes(), gotErr.Bytes(), wantErr.Bytes())
			}
			return
		case err != nil:
			t.Fatalf("DemuxReader err %v, StdCopy none", err)
		}
		if !bytes.Equal(got, wantOut.Bytes()) || !bytes.Equal(gotErr.Bytes(), wantErr.Bytes()) {
			t.Fatalf("stdout %q/%q stderr %q/%q", got, wantOut.Bytes(), gotErr.Bytes(), wantErr.Bytes())
		}
	})
}

// claimsLargeFrame reports whether a frame header in data claims more than
// 64 KiB.
func claimsLargeFrame(data []byte) bool {
	for pos := 0; pos+8 <= len(data); {
		size := int(binary.BigEndian.Uint32(data[pos+4:]))
		if size > 64<<10 {
			return true
		}
		pos += 8 + size
	}
	return false
}

// countingReader counts the reads made of it.
type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// TestDemuxReaderReadsWholeFrames: small frames are taken in with their
// headers in one read of the stream, not a read per header and per payload.
func TestDemuxReaderReadsWholeFrames(t *testing.T) {
	var stream bytes.Buffer
	var want strings.Builder
	for i := 0; i < 100; i++ {
		line := strings.Repeat("x", 90) + "\n"
		stream.Write(frame(1, line))
		want.WriteString(line)
	}
	src := &countingReader{r: &stream}
	got, err := io.ReadAll(NewDemuxReader(src, nil))
	if err != nil || string(got) != want.String() {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	if src.reads > 3 {
		t.Errorf("100 frames of %d bytes took %d reads of the stream, want at most 3", 8+91, src.reads)
	}
}

// TestDemuxReaderReturnsBufferedFrames: one Read hands on the stdout of
// every frame the buffer already holds (Podman sends 8 KiB frames, Docker
// 32 KiB; an ExecStream buffers 256 KiB), passing stderr frames on as it
// goes, and stops before an engine error frame, which the next Read
// reports.
func TestDemuxReaderReturnsBufferedFrames(t *testing.T) {
	var stream bytes.Buffer
	var wantOut, wantErr strings.Builder
	for i := 0; i < 20; i++ {
		out := strings.Repeat(string(rune('a'+i)), 8<<10)
		stream.Write(frame(1, out))
		wantOut.WriteString(out)
		if i%5 == 0 {
			stream.Write(frame(2, "warn\n"))
			wantErr.WriteString("warn\n")
		}
	}
	stream.Write(frame(3, "engine gave up"))
	var stderr bytes.Buffer
	d := newDemuxReaderSize(&stream, &stderr, streamDemuxBuffer)
	p := make([]byte, 1<<20)
	n, err := d.Read(p)
	if err != nil || string(p[:n]) != wantOut.String() || stderr.String() != wantErr.String() {
		t.Fatalf("first Read: %d bytes (want %d), stderr %q, err %v", n, wantOut.Len(), stderr.String(), err)
	}
	if n, err := d.Read(p); n != 0 || err == nil || !strings.Contains(err.Error(), "engine gave up") {
		t.Fatalf("second Read: %d bytes, %v; want the engine's error", n, err)
	}
	// A small p takes what fits and leaves the rest for the next Read.
	stream.Reset()
	stream.Write(frame(1, "hello "))
	stream.Write(frame(1, "world\n"))
	d = NewDemuxReader(&stream, nil)
	small := make([]byte, 8)
	n, err = d.Read(small)
	if err != nil || string(small[:n]) != "hello wo" {
		t.Fatalf("small Read: %q, %v", small[:n], err)
	}
	rest, err := io.ReadAll(d)
	if err != nil || string(rest) != "rld\n" {
		t.Fatalf("rest: %q, %v", rest, err)
	}
}
