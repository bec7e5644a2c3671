package acp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// chunkReader returns data in reads whose sizes cycle through sizes.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
	err   error // returned once data is used up; io.EOF when nil
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	n := len(r.data)
	if len(r.sizes) > 0 {
		n = max(1, r.sizes[r.i%len(r.sizes)])
		r.i++
	}
	n = min(n, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// readAll collects frames (copied) and oversize errors until the end.
func readAll(t *testing.T, fr *FrameReader) (frames []string, tooLarge []*FrameTooLargeError, err error) {
	t.Helper()
	for range 100000 {
		f, err := fr.Next()
		if e, ok := asTooLarge(err); ok {
			tooLarge = append(tooLarge, e)
			continue
		}
		if err != nil {
			return frames, tooLarge, err
		}
		frames = append(frames, string(f))
	}
	t.Fatal("FrameReader did not reach the end of a finite stream")
	return nil, nil, nil
}

func TestFrameReaderReassemblesAtEveryBoundary(t *testing.T) {
	frames := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n",
		`{"a":"b"}` + "\r\n",
		"\n",
		"\r\n",
		`{"last":true}`, // no terminator at the end of the stream
	}
	input := strings.Join(frames, "")
	for cut := 0; cut <= len(input); cut++ {
		r := &chunkReader{data: []byte(input), sizes: []int{max(cut, 1), len(input)}}
		got, big, err := readAll(t, NewFrameReader(r, 1024))
		if err != io.EOF || len(big) != 0 {
			t.Fatalf("cut %d: err %v, oversize %d", cut, err, len(big))
		}
		if strings.Join(got, "|") != strings.Join(frames, "|") {
			t.Fatalf("cut %d: frames %q, want %q", cut, got, frames)
		}
	}
	for _, size := range []int{1, 2, 3, 7} {
		r := &chunkReader{data: []byte(input), sizes: []int{size}}
		got, _, _ := readAll(t, NewFrameReader(r, 1024))
		if strings.Join(got, "|") != strings.Join(frames, "|") {
			t.Fatalf("reads of %d bytes: frames %q, want %q", size, got, frames)
		}
	}
}

func TestFrameReaderOversize(t *testing.T) {
	const limit = 100
	big := `{"id":7,"method":"x","params":"` + strings.Repeat("a", 300) + `"}`
	tests := []struct {
		name      string
		input     string
		sizes     []int
		wantFrame []string
		wantSizes []int64
	}{
		{"at the limit passes", strings.Repeat("b", limit) + "\n", nil, []string{strings.Repeat("b", limit) + "\n"}, nil},
		{"one over the limit", strings.Repeat("b", limit+1) + "\nok\n", nil, []string{"ok\n"}, []int64{limit + 1}},
		{"large then small", big + "\n" + "{}\n", nil, []string{"{}\n"}, []int64{int64(len(big))}},
		{"large in small reads", big + "\r\n" + "{}\n", []int{3}, []string{"{}\n"}, []int64{int64(len(big)) + 1}},
		{"large without newline at the end", "{}\n" + big, []int{50}, []string{"{}\n"}, []int64{int64(len(big))}},
		{"two large", big + "\n" + big + "\n", []int{readChunk}, nil, []int64{int64(len(big)), int64(len(big))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fr := NewFrameReader(&chunkReader{data: []byte(tt.input), sizes: tt.sizes}, limit)
			frames, tooLarge, err := readAll(t, fr)
			if err != io.EOF {
				t.Fatalf("err = %v, want io.EOF", err)
			}
			if strings.Join(frames, "|") != strings.Join(tt.wantFrame, "|") {
				t.Errorf("frames %q, want %q", frames, tt.wantFrame)
			}
			if len(tooLarge) != len(tt.wantSizes) {
				t.Fatalf("%d oversize frames, want %d", len(tooLarge), len(tt.wantSizes))
			}
			for i, e := range tooLarge {
				if e.Size != tt.wantSizes[i] || e.Limit != limit || !errors.Is(e, ErrFrameTooLarge) {
					t.Errorf("oversize %d: size %d limit %d, want size %d", i, e.Size, e.Limit, tt.wantSizes[i])
				}
				if !strings.HasPrefix(tt.input, string(e.Head)) && !strings.HasPrefix(big, string(e.Head)) {
					t.Errorf("oversize %d: head %q is not the frame's start", i, e.Head)
				}
			}
			if len(fr.buf) > limit+readChunk {
				t.Errorf("buffer grew to %d bytes, over limit+chunk %d", len(fr.buf), limit+readChunk)
			}
		})
	}
}

func TestFrameReaderNeverBuffersMoreThanLimitPlusChunk(t *testing.T) {
	const limit = 1000
	huge := bytes.Repeat([]byte("x"), 5*readChunk)
	fr := NewFrameReader(&chunkReader{data: append(huge, '\n')}, limit)
	_, err := fr.Next()
	e, ok := asTooLarge(err)
	if !ok || e.Size != int64(len(huge)) {
		t.Fatalf("Next() err = %v, want oversize of %d bytes", err, len(huge))
	}
	if len(fr.buf) > limit+readChunk {
		t.Fatalf("buffer is %d bytes, over %d", len(fr.buf), limit+readChunk)
	}
	if len(e.Head) > headBytes {
		t.Fatalf("head is %d bytes, over %d", len(e.Head), headBytes)
	}
}

func TestFrameReaderErrors(t *testing.T) {
	boom := errors.New("boom")
	fr := NewFrameReader(&chunkReader{data: []byte("{}\npartial"), err: boom}, 0)
	frames, _, err := readAll(t, fr)
	if err != boom || len(frames) != 1 || frames[0] != "{}\n" {
		t.Fatalf("frames %q err %v; want the complete frame, then boom (the partial frame dropped)", frames, err)
	}

	fr = NewFrameReader(readerFunc(func([]byte) (int, error) { return 0, nil }), 0)
	if _, err := fr.Next(); err != io.ErrNoProgress {
		t.Fatalf("a reader that never makes progress: err = %v, want io.ErrNoProgress", err)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestFrameReaderBuffered(t *testing.T) {
	fr := NewFrameReader(&chunkReader{data: []byte("a\nb\nc"), sizes: []int{3}}, 0)
	if fr.Buffered() {
		t.Fatal("nothing read yet, but Buffered")
	}
	want := []struct {
		frame    string
		buffered bool
	}{{"a\n", false}, {"b\n", false}, {"c", false}}
	for i, w := range want {
		got, err := fr.Next()
		if err != nil || string(got) != w.frame {
			t.Fatalf("frame %d = %q, %v; want %q", i, got, err, w.frame)
		}
		if fr.Buffered() != w.buffered {
			t.Fatalf("after frame %d Buffered = %v", i, !w.buffered)
		}
	}
	fr = NewFrameReader(bytes.NewReader([]byte("one\ntwo\nthree")), 0)
	if _, err := fr.Next(); err != nil {
		t.Fatal(err)
	}
	if !fr.Buffered() {
		t.Fatal("a second complete frame is in the buffer, but not Buffered")
	}
	if got, _ := fr.Next(); string(got) != "two\n" {
		t.Fatalf("after Buffered, Next = %q", got)
	}
}
