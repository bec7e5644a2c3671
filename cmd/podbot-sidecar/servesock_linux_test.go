//go:build linux

package main

import (
	"bytes"
	"context"
	"io"
	"net"
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

// TestServeSocketBoundsConnections: connections that never finish the
// handshake hold at most maxSocketConns slots, each for at most the
// handshake timeout; one more is closed at once instead of queueing, and
// podbot gets in again as soon as a slot frees.
func TestServeSocketBoundsConnections(t *testing.T) {
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go serveSocket(ctx, newServer(ws, serveOptions{}), dir, taken, io.Discard)
	sock := dir + "/" + sidecarsock.SocketName
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for len(held) < maxSocketConns {
		c, err := net.Dial("unix", sock)
		if err != nil {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		held = append(held, c)
	}
	time.Sleep(100 * time.Millisecond) // let the server take them all
	dctx, dcancel := context.WithTimeout(ctx, 3*time.Second)
	defer dcancel()
	start := time.Now()
	if _, err := sidecarsock.Dial(dctx, dir, os.Getuid(), key); err == nil {
		t.Fatal("a connection past the limit was served")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the connection past the limit waited %v instead of being closed", d)
	}
	held[0].Close()
	held = held[1:]
	var c net.Conn
	for i := 0; i < 100; i++ {
		if c, err = sidecarsock.Dial(dctx, dir, os.Getuid(), key); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("podbot did not get a freed slot: %v", err)
	}
	c.Close()
}
