package main

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/podbot/podbot/sidecarsock"
	"github.com/podbot/podbot/tools"
)

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
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("sidecar socket: %w", err)
		}
		select {
		case slots <- struct{}{}:
		default:
			c.Close()
			continue
		}
		go func() {
			defer func() { <-slots }()
			serveConn(ctx, server, c, key, stderr)
		}()
	}
}

// serveConn authenticates one connection and serves an MCP session on it.
func serveConn(ctx context.Context, server *mcp.Server, c net.Conn, key []byte, stderr io.Writer) {
	defer c.Close()
	if err := sidecarsock.Server(c, key); err != nil {
		fmt.Fprintf(stderr, "podbot-sidecar: refused a socket connection: %v\n", err)
		return
	}
	ss, err := server.Connect(ctx, &tools.LineTransport{Reader: c, Writer: c, MaxFrameBytes: maxFrameBytes, DirectRead: true}, nil)
	if err != nil {
		return
	}
	_ = ss.Wait()
}
