package egress

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// MaxClientHelloBytes bounds the bytes read while looking for a tunnel's
// TLS ClientHello.
const MaxClientHelloBytes = 16 << 10

// spliceBufBytes is each tunnel direction's buffer.
const spliceBufBytes = 64 << 10

// errHelloRead stops crypto/tls once it has parsed the ClientHello.
var errHelloRead = errors.New("client hello read")

// ReadClientHello reads a TLS ClientHello from r, reading at most max
// bytes, and returns every byte it read (to be replayed upstream) and the
// server name (SNI) it carries, "" when there is none. The parsing is
// crypto/tls's own: a server handshake over a replaying conn, stopped as
// soon as the hello is parsed. Anything but a well-formed ClientHello is an
// error.
func ReadClientHello(r io.Reader, max int) (read []byte, sni string, err error) {
	rc := &recordConn{r: r, max: max}
	var seen bool
	srv := tls.Server(rc, &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			seen, sni = true, h.ServerName
			return nil, errHelloRead
		},
	})
	herr := srv.Handshake()
	if !seen {
		if rc.err != nil {
			herr = rc.err
		}
		return rc.buf, "", fmt.Errorf("not a TLS ClientHello: %w", herr)
	}
	return rc.buf, sni, nil
}

// recordConn is the net.Conn ReadClientHello hands crypto/tls: reads come
// from r and are recorded, up to max bytes; writes (an alert) are dropped.
type recordConn struct {
	r   io.Reader
	max int
	buf []byte
	err error
}

var errHelloTooBig = errors.New("ClientHello larger than the proxy reads")

func (c *recordConn) Read(b []byte) (int, error) {
	room := c.max - len(c.buf)
	if room <= 0 {
		c.err = errHelloTooBig
		return 0, c.err
	}
	if len(b) > room {
		b = b[:room]
	}
	n, err := c.r.Read(b)
	c.buf = append(c.buf, b[:n]...)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

func (c *recordConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c *recordConn) Close() error                     { return nil }
func (c *recordConn) LocalAddr() net.Addr              { return nopAddr{} }
func (c *recordConn) RemoteAddr() net.Addr             { return nopAddr{} }
func (c *recordConn) SetDeadline(time.Time) error      { return nil }
func (c *recordConn) SetReadDeadline(time.Time) error  { return nil }
func (c *recordConn) SetWriteDeadline(time.Time) error { return nil }

type nopAddr struct{}

func (nopAddr) Network() string { return "replay" }
func (nopAddr) String() string  { return "replay" }

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// splice copies both ways between client and upstream until both
// directions end, half-closing each side when its source ends. It returns
// the bytes sent up (client to upstream) and down. A tunnel with no bytes
// either way for idle is closed.
func splice(client, upstream net.Conn, idle time.Duration) (up, down int64) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	var wg sync.WaitGroup
	wg.Add(2)
	pump := func(dst, src net.Conn, n *int64) {
		defer wg.Done()
		err := copyIdle(dst, src, n, &last, idle)
		if err == nil {
			closeWrite(dst)
			return
		}
		// An error, or idle: end both directions.
		client.Close()
		upstream.Close()
	}
	go pump(upstream, client, &up)
	go pump(client, upstream, &down)
	wg.Wait()
	return up, down
}

// copyIdle copies src to dst through a bounded buffer, counting into n.
// A read deadline that passes while the other direction was active within
// idle does not end the copy. It returns nil at src's EOF.
func copyIdle(dst, src net.Conn, n *int64, last *atomic.Int64, idle time.Duration) error {
	buf := make([]byte, spliceBufBytes)
	for {
		src.SetReadDeadline(time.Now().Add(idle))
		nr, rerr := src.Read(buf)
		if nr > 0 {
			last.Store(time.Now().UnixNano())
			dst.SetWriteDeadline(time.Now().Add(idle))
			nw, werr := dst.Write(buf[:nr])
			*n += int64(nw)
			if werr != nil {
				return werr
			}
		}
		if rerr != nil {
			if rerr == io.EOF {
				return nil
			}
			if errors.Is(rerr, os.ErrDeadlineExceeded) && time.Since(time.Unix(0, last.Load())) < idle {
				continue
			}
			return rerr
		}
	}
}

// closeWrite half-closes c where it can, and closes it otherwise.
func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}
