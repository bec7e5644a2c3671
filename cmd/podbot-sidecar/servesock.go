package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/podbot/podbot/sidecarsock"
	"github.com/podbot/podbot/tools"
)

// acceptPause is the wait after a failed accept.
const acceptPause = 50 * time.Millisecond

// maxRefusalLines bounds the refused connections written to stderr (the
// container's log, on the host's disk): anything in the sandbox can
// connect as often as it likes.
const maxRefusalLines = 10

// refusalLog writes the first maxRefusalLines refusals to w.
type refusalLog struct {
	mu sync.Mutex
	n  int
	w  io.Writer
}

func (r *refusalLog) refused(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	switch {
	case r.n < maxRefusalLines:
		fmt.Fprintf(r.w, "podbot-sidecar: refused a socket connection: %v\n", err)
	case r.n == maxRefusalLines:
		fmt.Fprintf(r.w, "podbot-sidecar: refused a socket connection: %v (further refusals are not logged)\n", err)
	}
}

// maxSocketConns bounds the connections the socket serves at once; a
// connection past it is closed at once. podbot needs one per session.
const maxSocketConns = 16

// serveSocket serves server on the unix socket in the link directory dir
// until ctx ends: every connection must first pass the handshake with key
// (sidecarsock.Server, bounded in time), then carries one MCP session with
// the same framing as the stdio stream.
func serveSocket(ctx context.Context, server *mcp.Server, dir string, key []byte, stderr io.Writer) error {
	l, err := sidecarsock.Listen(dir)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	slots := make(chan struct{}, maxSocketConns)
	logged := &refusalLog{w: stderr}
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("sidecar socket: %w", err)
			}
			// Out of descriptors, say: wait rather than spin or quit.
			time.Sleep(acceptPause)
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			c.Close()
			continue
		}
		go func() {
			defer func() { <-slots }()
			serveConn(ctx, server, c, key, logged)
		}()
	}
}

// serveConn authenticates one connection and serves an MCP session on it.
func serveConn(ctx context.Context, server *mcp.Server, c net.Conn, key []byte, logged *refusalLog) {
	defer c.Close()
	if err := sidecarsock.Server(c, key); err != nil {
		logged.refused(err)
		return
	}
	ss, err := server.Connect(ctx, &tools.LineTransport{Reader: c, Writer: c, MaxFrameBytes: maxFrameBytes, DirectRead: true}, nil)
	if err != nil {
		return
	}
	_ = ss.Wait()
}
