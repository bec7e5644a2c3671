package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// intercept serves a CONNECT to a host that a secret belongs to: it ends
// the client's TLS with a leaf from the CA (the ClientHello's server name
// must be the CONNECT host, as for tunnels, and only http/1.1 is offered),
// then relays HTTP/1.1 requests one by one to upstream over TLS verified
// against the system roots and UpstreamRoots, putting each secret's value
// in place of its placeholder where the secret belongs to this host, and
// refusing a request that carries the placeholder of a secret that does
// not. Bodies stream both ways through bounded buffers.
//
// raw is the hijacked client connection (early bytes replayed), upstream
// the dialled checked address. Both are closed by the caller.
func (p *Proxy) intercept(ctx context.Context, raw, upstream net.Conn, host string, port int, dec Decision) {
	entry := LogEntry{Host: host, Port: port, Method: http.MethodConnect, Rule: dec.Rule}
	logEnd := func(decision, reason string) {
		entry.Decision, entry.Reason, entry.Time = decision, reason, time.Now().UTC()
		p.log.write(entry)
	}
	cc := &idleConn{Conn: raw, idle: p.o.IdleTimeout}
	var sniRefusal string
	srv := tls.Server(cc, &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if reason := checkSNI(host, h.ServerName, nil); reason != "" {
				sniRefusal = reason
				return nil, errors.New(reason)
			}
			return p.o.CA.Leaf(host)
		},
	})
	cc.SetDeadline(time.Now().Add(p.o.HeaderTimeout))
	if err := srv.HandshakeContext(ctx); err != nil {
		if sniRefusal != "" {
			logEnd(DecisionDeny, sniRefusal)
		} else {
			logEnd(DecisionDeny, "the client's TLS handshake with the vault failed: "+err.Error())
		}
		return
	}
	defer srv.Close()

	// lim bounds each request's header block; it is lifted for the body.
	lim := &io.LimitedReader{R: srv, N: maxHeaderBytes}
	br := bufio.NewReaderSize(lim, 16<<10)
	var up *upstreamConn
	defer func() {
		if up != nil {
			up.Close()
		}
	}()
	for {
		cc.SetDeadline(time.Now().Add(p.o.IdleTimeout))
		lim.N = maxHeaderBytes + 4096
		req, err := http.ReadRequest(br)
		cc.SetDeadline(time.Time{})
		if err != nil {
			if lim.N <= 0 {
				writeStatus(srv, http.StatusRequestHeaderFieldsTooLarge, "request headers too large")
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !isTimeout(err) {
				writeStatus(srv, http.StatusBadRequest, "malformed request")
			}
			return
		}
		lim.N = math.MaxInt64
		e := LogEntry{Host: host, Port: port, Method: req.Method}
		if len(e.Method) > 32 {
			e.Method = e.Method[:32]
		}
		keep, u := p.relay(ctx, srv, req, e, upstream, up, host, port)
		upstream, up = nil, u // the raw upstream is used once, by the first relay
		if !keep {
			return
		}
	}
}

// relay serves one intercepted request and reports whether the client
// connection may serve another, and the upstream connection to reuse.
func (p *Proxy) relay(ctx context.Context, client net.Conn, req *http.Request, e LogEntry, raw net.Conn, up *upstreamConn,
	host string, port int) (bool, *upstreamConn) {
	fail := func(code int, decision, reason, msg string) (bool, *upstreamConn) {
		e.Decision, e.Reason, e.Time = decision, reason, time.Now().UTC()
		p.log.write(e)
		writeStatus(client, code, msg)
		return false, up
	}
	dec := p.Policy().Decide(host, port) // the policy may have changed since CONNECT
	e.Rule = dec.Rule
	if !dec.Allowed {
		return fail(http.StatusForbidden, DecisionDeny, dec.Reason, "refused: "+dec.Reason)
	}
	if req.ProtoMajor != 1 || req.Method == http.MethodConnect || req.Header.Get("Upgrade") != "" {
		return fail(http.StatusNotImplemented, DecisionDeny, "protocol upgrades, CONNECT and HTTP/2 are not relayed on a vault host",
			"protocol upgrades are not relayed on a vault host")
	}
	secrets := p.liveSecrets()
	if m := findMisuse(secrets, host, port, req.Header, req.RequestURI); m != nil {
		return fail(http.StatusForbidden, DecisionDeny, m.Error(), m.Error())
	}
	injected := inject(secrets, host, port, req.Header)

	// The request as it goes upstream: HTTP/1.1 to the CONNECT host.
	removeHopByHop(req.Header)
	expect := req.Header.Get("Expect")
	req.Header.Del("Expect")
	req.Host = host
	if strings.Contains(host, ":") {
		req.Host = "[" + host + "]"
	}
	if port != 443 {
		req.Host += ":" + strconv.Itoa(port)
	}
	req.URL.Scheme, req.URL.Host = "", ""
	keepClient := !req.Close
	req.Close = false
	body := &countingReader{r: req.Body}
	req.Body = body
	if strings.EqualFold(expect, "100-continue") && req.ContentLength != 0 {
		io.WriteString(client, "HTTP/1.1 100 Continue\r\n\r\n")
	}

	var resp *http.Response
	for attempt := 0; ; attempt++ {
		reused := up != nil
		if up == nil {
			var err error
			if up, err = p.dialUpstream(ctx, raw, host, port); err != nil {
				raw = nil
				return fail(http.StatusBadGateway, DecisionAllow, dec.Reason+"; upstream TLS: "+err.Error(), "upstream unreachable")
			}
			raw = nil
		}
		var err error
		resp, err = up.roundTrip(req)
		if err == nil {
			break
		}
		up.Close()
		up = nil
		// A kept-alive upstream may have closed meanwhile: retry a request
		// with no body, once, on a new connection.
		if attempt > 0 || !reused || body.n > 0 || req.ContentLength != 0 {
			return fail(http.StatusBadGateway, DecisionAllow, dec.Reason+"; upstream: "+err.Error(), "upstream failed")
		}
	}
	defer resp.Body.Close()
	removeHopByHop(resp.Header)
	keepUp := !resp.Close
	if resp.ContentLength < 0 && len(resp.TransferEncoding) == 0 {
		keepClient = false // a body that ends when the connection does
	}
	resp.Close = !keepClient
	down := &countingReader{r: resp.Body}
	resp.Body = down
	werr := resp.Write(client)
	e.Decision, e.Reason = DecisionAllow, dec.Reason+"; intercepted for the vault"
	if len(injected) > 0 {
		e.Reason += "; injected secret " + strings.Join(injected, ", ")
	}
	if werr != nil {
		e.Reason += "; client: " + werr.Error()
	}
	e.BytesUp, e.BytesDown, e.Time = body.n, down.n, time.Now().UTC()
	p.log.write(e)
	if !keepUp {
		up.Close()
		up = nil
	}
	return keepClient && werr == nil, up
}

// upstreamConn is one verified TLS connection to an intercepted host.
type upstreamConn struct {
	*tls.Conn
	br  *bufio.Reader
	lim *io.LimitedReader
}

// roundTrip writes req and reads its response, passing 1xx answers other
// than 101 by.
func (u *upstreamConn) roundTrip(req *http.Request) (*http.Response, error) {
	if err := req.Write(u.Conn); err != nil {
		return nil, err
	}
	for {
		u.lim.N = maxResponseHeaderBytes
		resp, err := http.ReadResponse(u.br, req)
		u.lim.N = math.MaxInt64
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			if resp.StatusCode == http.StatusSwitchingProtocols {
				resp.Body.Close()
				return nil, errors.New("upstream switched protocols")
			}
			return resp, nil
		}
		resp.Body.Close()
	}
}

// dialUpstream makes the TLS connection to host over raw, or over a new
// connection to a checked address when raw is nil.
func (p *Proxy) dialUpstream(ctx context.Context, raw net.Conn, host string, port int) (*upstreamConn, error) {
	if raw == nil {
		_, addrs, err := p.admit(ctx, p.Policy(), host, port)
		if err != nil {
			return nil, err
		}
		if raw, err = p.dialAny(ctx, addrs); err != nil {
			return nil, err
		}
	}
	sni := host
	if _, err := netip.ParseAddr(host); err == nil {
		sni = ""
	}
	tc := tls.Client(&idleConn{Conn: raw, idle: p.o.IdleTimeout}, &tls.Config{
		ServerName:         sni,
		MinVersion:         tls.VersionTLS12,
		NextProtos:         []string{"http/1.1"},
		InsecureSkipVerify: true, // verified by VerifyConnection, against both root sets
		VerifyConnection:   p.verifyUpstream(host),
	})
	hctx, cancel := context.WithTimeout(ctx, p.o.DialTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		raw.Close()
		return nil, err
	}
	lim := &io.LimitedReader{R: tc, N: math.MaxInt64}
	return &upstreamConn{Conn: tc, br: bufio.NewReaderSize(lim, 16<<10), lim: lim}, nil
}

// verifyUpstream verifies an upstream's certificate chain for host
// against the system roots, then against UpstreamRoots.
func (p *Proxy) verifyUpstream(host string) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("upstream sent no certificate")
		}
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		var firstErr error
		for _, roots := range []*x509.CertPool{p.roots, p.o.UpstreamRoots} {
			if roots == nil {
				continue
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{DNSName: host, Roots: roots, Intermediates: inter})
			if err == nil {
				return nil
			}
			if firstErr == nil {
				firstErr = err
			}
		}
		if firstErr == nil {
			firstErr = errors.New("no roots to verify the upstream against")
		}
		return firstErr
	}
}

// hopByHop are the headers that belong to one connection (RFC 9110 7.6.1).
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// removeHopByHop drops the hop-by-hop headers, those Connection names,
// and every Proxy-* header.
func removeHopByHop(h http.Header) {
	for _, v := range h["Connection"] {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				h.Del(f)
			}
		}
	}
	for _, k := range hopByHop {
		h.Del(k)
	}
	stripProxyHeaders(h)
}

// writeStatus answers a short text response and asks to close.
func writeStatus(w io.Writer, code int, msg string) {
	body := "podbot egress proxy: " + msg + "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// earlyConn replays bytes the client sent before the CONNECT answer.
type earlyConn struct {
	net.Conn
	early []byte
}

func (c *earlyConn) Read(b []byte) (int, error) {
	if len(c.early) > 0 {
		n := copy(b, c.early)
		c.early = c.early[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// idleConn gives every read and write a deadline idle from now, unless a
// fixed deadline is set (SetDeadline with a non-zero time).
type idleConn struct {
	net.Conn
	idle  time.Duration
	fixed atomic.Int64 // UnixNano; 0 for none. crypto/tls sets it from another goroutine.
}

func (c *idleConn) SetDeadline(t time.Time) error {
	if t.IsZero() {
		c.fixed.Store(0)
	} else {
		c.fixed.Store(t.UnixNano())
	}
	return c.Conn.SetDeadline(t)
}

func (c *idleConn) deadline() time.Time {
	if f := c.fixed.Load(); f != 0 {
		return time.Unix(0, f)
	}
	return time.Now().Add(c.idle)
}

func (c *idleConn) Read(b []byte) (int, error) {
	c.Conn.SetReadDeadline(c.deadline())
	return c.Conn.Read(b)
}

func (c *idleConn) Write(b []byte) (int, error) {
	c.Conn.SetWriteDeadline(c.deadline())
	return c.Conn.Write(b)
}
