//go:build linux

package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/podbot/podbot/sidecarsock"
	"github.com/podbot/podbot/tools"
)

// TestServeSocketCallsATool serves the tools on a link directory's socket
// as "init serve --listen" does and calls one over a dialed connection;
// a second connection with the wrong key is refused without disturbing it.
func TestServeSocketCallsATool(t *testing.T) {
	dir, key, err := sidecarsock.Prepare(t.TempDir(), os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	taken, err := sidecarsock.TakeKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := tools.NewWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- serveSocket(sctx, newServer(ws, serveOptions{}), dir, taken, io.Discard) }()
	var c interface {
		io.ReadWriteCloser
	}
	for i := 0; ; i++ {
		if c, err = sidecarsock.Dial(ctx, dir, os.Getuid(), key); err == nil || i > 200 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	wrong, _ := sidecarsock.NewKey()
	if _, err := sidecarsock.Dial(ctx, dir, os.Getuid(), wrong); err == nil {
		t.Fatal("a host without the key was served")
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&tools.LineTransport{Reader: c, Writer: c, MaxFrameBytes: 1 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.LsTool, Arguments: map[string]any{"path": "."}})
	if err != nil || res.IsError {
		t.Fatalf("ls = %+v, %v", res, err)
	}
	cs.Close()
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestInitServeNeedsListen(t *testing.T) {
	if code := run(context.Background(), []string{"init", "serve", "--root", "/workspace"}, io.Discard, io.Discard); code != 2 {
		t.Fatalf("init serve without --listen exited %d, want 2", code)
	}
	if code := run(context.Background(), []string{"init", "egress"}, io.Discard, io.Discard); code != 2 {
		t.Fatalf("init egress exited %d, want 2", code)
	}
}

func TestRefusalLogIsBounded(t *testing.T) {
	var buf bytes.Buffer
	r := &refusalLog{w: &buf}
	for range 1000 {
		r.refused(sidecarsock.ErrAuth)
	}
	if n := bytes.Count(buf.Bytes(), []byte("\n")); n != maxRefusalLines {
		t.Fatalf("%d lines logged for 1000 refusals, want %d", n, maxRefusalLines)
	}
}
