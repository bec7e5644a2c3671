package acp

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logCapture returns a logger that records to a buffer.
func logCapture() (*slog.Logger, *syncBuffer) {
	var b syncBuffer
	return slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})), &b
}

// runPumps runs the client direction to its end, then the agent direction,
// through one filter, reading each side in reads of the given sizes. It
// returns what reached the agent and what reached the client.
func runPumps(t testing.TB, p Policy, fromClient, fromAgent []byte, sizes []int) (toAgent, toClient string) {
	t.Helper()
	if p.Logger == nil {
		p.Logger, _ = logCapture()
	}
	f := newFilter(p)
	var a, c syncBuffer
	wa, wc := &frameWriter{w: &a}, &frameWriter{w: &c}
	ctx := context.Background()
	if err := pump(ctx, f, client, &chunkReader{data: fromClient, sizes: sizes}, wa, wc, p.maxFrame()); err != nil {
		t.Fatalf("client pump: %v", err)
	}
	if err := pump(ctx, f, agent, &chunkReader{data: fromAgent, sizes: sizes}, wc, wa, p.maxFrame()); err != nil {
		t.Fatalf("agent pump: %v", err)
	}
	return a.String(), c.String()
}
