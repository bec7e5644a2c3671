package hostflow

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestBatchPipeBatchesBufferedWrites(t *testing.T) {
	p := newBatchPipe(64)
	for _, w := range []string{"ab", "cd", "ef\n"} {
		if n, err := p.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", w, n, err)
		}
	}
	buf := make([]byte, 64)
	n, err := p.Read(buf)
	if err != nil || string(buf[:n]) != "abcdef\n" {
		t.Fatalf("Read = %q, %v; want every buffered write at once", buf[:n], err)
	}
	p.CloseWrite()
	if n, err := p.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("Read after CloseWrite = %d, %v; want EOF", n, err)
	}
}

func TestBatchPipeBoundAndOrder(t *testing.T) {
	const max = 16
	tests := []struct {
		name    string
		writes  [][]byte
		readBuf int
	}{
		{"write larger than the bound", [][]byte{bytes.Repeat([]byte("0123456789"), 10)}, 7},
		{"many small writes", func() [][]byte {
			var w [][]byte
			for i := 0; i < 50; i++ {
				w = append(w, []byte{byte('a' + i%26)})
			}
			return w
		}(), 5},
		{"reader buffer larger than the bound", [][]byte{bytes.Repeat([]byte("z"), 100)}, 1000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newBatchPipe(max)
			var want []byte
			for _, w := range tc.writes {
				want = append(want, w...)
			}
			werr := make(chan error, 1)
			go func() {
				for _, w := range tc.writes {
					if _, err := p.Write(w); err != nil {
						werr <- err
						return
					}
				}
				werr <- p.CloseWrite()
			}()
			var got []byte
			buf := make([]byte, tc.readBuf)
			for {
				n, err := p.Read(buf)
				got = append(got, buf[:n]...)
				p.mu.Lock()
				held := len(p.buf)
				p.mu.Unlock()
				if held > max {
					t.Fatalf("pipe holds %d bytes, over its bound of %d", held, max)
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := <-werr; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("read %q, want %q", got, want)
			}
		})
	}
}

func TestBatchPipeCloseRead(t *testing.T) {
	gone := errors.New("server gone")
	p := newBatchPipe(4)
	if _, err := p.Write([]byte("full")); err != nil {
		t.Fatal(err)
	}
	blocked := make(chan error, 1)
	go func() {
		_, err := p.Write([]byte("more")) // waits: the buffer is full
		blocked <- err
	}()
	p.CloseRead(gone)
	if err := <-blocked; !errors.Is(err, gone) {
		t.Errorf("blocked Write = %v, want %v", err, gone)
	}
	if _, err := p.Write([]byte("x")); !errors.Is(err, gone) {
		t.Errorf("Write after CloseRead = %v, want %v", err, gone)
	}
	if _, err := p.Read(make([]byte, 8)); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("Read after CloseRead = %v, want io.ErrClosedPipe", err)
	}
}

func TestBatchPipeWriteAfterCloseWrite(t *testing.T) {
	p := newBatchPipe(8)
	p.CloseWrite()
	if _, err := p.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("Write after CloseWrite = %v, want io.ErrClosedPipe", err)
	}
}
