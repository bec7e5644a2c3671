package acp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// noteOf is a session/update notification of exactly size bytes whose text
// carries i, so that lost, repeated or reordered frames show.
func noteOf(i, size int) string {
	head := fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"n":%d,"t":"`, i)
	tail := `"}}` + "\n"
	return head + strings.Repeat(string(rune('a'+i%26)), max(0, size-len(head)-len(tail))) + tail
}

// slowWriter copies each write when it is made (so a buffer the pump
// overwrote too early shows as corrupt output) and yields the processor a
// number of times that varies from write to write.
type slowWriter struct {
	mu     sync.Mutex
	out    bytes.Buffer
	writes int
	// fail, when > 0, makes the write of that number fail.
	fail int
}

var errSinkFailed = errors.New("sink failed")

func (w *slowWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.writes++
	n := w.writes
	w.mu.Unlock()
	if n == w.fail {
		return 0, errSinkFailed
	}
	for range n % 7 * 20 {
		runtime.Gosched()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out.Write(p)
	return len(p), nil
}

func (w *slowWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.String()
}

// TestPumpKeepsOrderWithASlowWriter sends frames of sizes around every
// buffer boundary (a span per read, batches after refused requests, frames
// over batchBytes, frames that outgrow the reader's buffer and one over the
// limit) through a writer that copies each write as it is made: every
// frame arrives once, whole and in order.
func TestPumpKeepsOrderWithASlowWriter(t *testing.T) {
	const limit = 1 << 20
	blocked := `{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{}}` + "\n"
	var in, want strings.Builder
	sizes := []int{100, 1024, 5000, 64 << 10, batchBytes - 10, batchBytes + 10, readChunk + 100, 2*readChunk + 1000, limit - 10}
	for i := range 45 {
		f := noteOf(i, sizes[i%len(sizes)])
		in.WriteString(f)
		want.WriteString(f)
		if i%10 == 3 {
			in.WriteString(blocked) // dropped: the frames after it are copied into a batch
		}
		if i == 20 {
			in.WriteString(noteOf(i, limit+100)) // over the limit: dropped
		}
	}
	for _, readSize := range []int{1000, 70 << 10, 1 << 20} {
		t.Run(fmt.Sprint(readSize), func(t *testing.T) {
			p := Policy{Mode: ModeACP, MaxFrameBytes: limit}
			p.Logger, _ = logCapture()
			out := &slowWriter{}
			var back syncBuffer
			err := pump(context.Background(), newFilter(p), agent, &chunkReader{data: []byte(in.String()), sizes: []int{readSize, readSize / 3}},
				&frameWriter{w: out}, &frameWriter{w: &back}, p.maxFrame())
			if err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != want.String() {
				t.Fatalf("forwarded %d bytes, want %d; first difference at %d", len(got), want.Len(), firstDiff(got, want.String()))
			}
			if n := strings.Count(back.String(), `"code":-32601`); n != 5 {
				t.Fatalf("%d refusals answered, want 5", n)
			}
		})
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestPumpEnds covers how each direction's pump ends: at the end of its
// input after writing everything, at a read error after writing the frames
// before it, and at a failed write, which stops the reading.
func TestPumpEnds(t *testing.T) {
	var in strings.Builder
	for i := range 400 {
		in.WriteString(noteOf(i, 1000))
	}
	boom := errors.New("boom")
	for _, from := range []peer{client, agent} {
		t.Run(from.String()+"/eof", func(t *testing.T) {
			p := Policy{Mode: ModeACP}
			p.Logger, _ = logCapture()
			out := &slowWriter{}
			err := pump(context.Background(), newFilter(p), from, &chunkReader{data: []byte(in.String()), sizes: []int{3000}},
				&frameWriter{w: out}, &frameWriter{w: io.Discard}, p.maxFrame())
			if err != nil || out.String() != in.String() {
				t.Fatalf("pump = %v with %d of %d bytes written", err, len(out.String()), in.Len())
			}
		})
		t.Run(from.String()+"/read error", func(t *testing.T) {
			p := Policy{Mode: ModeACP}
			p.Logger, _ = logCapture()
			out := &slowWriter{}
			err := pump(context.Background(), newFilter(p), from, &chunkReader{data: []byte(in.String()), sizes: []int{3000}, err: boom},
				&frameWriter{w: out}, &frameWriter{w: io.Discard}, p.maxFrame())
			if !errors.Is(err, boom) || out.String() != in.String() {
				t.Fatalf("pump = %v with %d of %d bytes written, want boom after all of them", err, len(out.String()), in.Len())
			}
			var we *writeError
			if errors.As(err, &we) {
				t.Fatalf("a read error reported as a write error: %v", err)
			}
		})
		t.Run(from.String()+"/write error", func(t *testing.T) {
			p := Policy{Mode: ModeACP}
			p.Logger, _ = logCapture()
			out := &slowWriter{fail: 3}
			src := &chunkReader{data: []byte(in.String()), sizes: []int{3000}}
			err := pump(context.Background(), newFilter(p), from, src,
				&frameWriter{w: out}, &frameWriter{w: io.Discard}, p.maxFrame())
			var we *writeError
			if !errors.As(err, &we) || !errors.Is(err, errSinkFailed) || we.to != other(from) {
				t.Fatalf("pump = %v, want the failed write to the %s", err, other(from))
			}
			if len(src.data) == 0 {
				t.Fatal("the pump read all its input after a write failed")
			}
		})
	}
}

// TestBridgeHalfClosesAfterTheLastFrame: the agent's stdin is half-closed
// only after the last of the client's frames reached it.
func TestBridgeHalfClosesAfterTheLastFrame(t *testing.T) {
	var in strings.Builder
	for i := range 300 {
		in.WriteString(noteOf(i, 2000))
	}
	stdin := &orderedHalfCloser{}
	agentOut := &waitThenEOF{reached: make(chan struct{}), release: nil}
	released := make(chan struct{})
	agentOut.release = released
	go func() {
		<-stdin.closedCh()
		close(released)
	}()
	err := Bridge(context.Background(), Policy{}, &chunkReader{data: []byte(in.String()), sizes: []int{5000}}, stdin, agentOut, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := stdin.beforeClose(); got != in.String() {
		t.Fatalf("the agent got %d of %d bytes before its stdin was closed", len(got), in.Len())
	}
}

// orderedHalfCloser is a slow writer that records what it had when
// CloseWrite was called.
type orderedHalfCloser struct {
	slowWriter
	once    sync.Once
	ch      chan struct{}
	chOnce  sync.Once
	atClose string
}

func (h *orderedHalfCloser) closedCh() chan struct{} {
	h.chOnce.Do(func() { h.ch = make(chan struct{}) })
	return h.ch
}

func (h *orderedHalfCloser) CloseWrite() error {
	h.once.Do(func() {
		h.atClose = h.String()
		close(h.closedCh())
	})
	return nil
}

func (h *orderedHalfCloser) beforeClose() string {
	<-h.closedCh()
	return h.atClose
}
