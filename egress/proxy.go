package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podbot/podbot/errdefs"
)

// Defaults for the zero values of Options.
const (
	DefaultMaxConns      = 256
	DefaultIdleTimeout   = 5 * time.Minute
	DefaultHeaderTimeout = 10 * time.Second
	DefaultDialTimeout   = 10 * time.Second
)

const (
	// maxHeaderBytes bounds a request's header block (Go adds 4 KiB of
	// slack); more gets 431.
	maxHeaderBytes = 32 << 10
	// maxResponseHeaderBytes bounds an upstream response's headers.
	maxResponseHeaderBytes = 64 << 10
	// maxAddrs bounds the addresses one name resolves to that are tried.
	maxAddrs = 16
)

// Resolver looks up a name's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configure a Proxy. Zero values take the defaults.
type Options struct {
	// Policy is the starting policy; nil allows nothing.
	Policy *Policy
	// Log receives the JSONL decision log: one LogEntry per tunnel or
	// forwarded request, written when it ends, and one per refusal at once.
	// nil logs nothing.
	Log io.Writer
	// UpstreamRoots are the roots trusted where the proxy itself verifies an
	// upstream's TLS; nil means the system roots. Tunnels are not verified
	// by the proxy: the client does that end to end.
	UpstreamRoots *x509.CertPool
	// Resolver resolves names no pin covers; nil means net.DefaultResolver.
	Resolver Resolver
	// Dial connects to a checked address ("ip:port"); nil means a
	// net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxConns caps concurrent client connections (DefaultMaxConns when 0);
	// a connection over the cap gets 503 and is closed.
	MaxConns int
	// IdleTimeout closes a keep-alive connection or a tunnel with no bytes
	// either way for this long (DefaultIdleTimeout when 0).
	IdleTimeout time.Duration
	// HeaderTimeout bounds reading a request's headers, and a tunnel's TLS
	// ClientHello (DefaultHeaderTimeout when 0).
	HeaderTimeout time.Duration
	// DialTimeout bounds resolving and connecting to a destination
	// (DefaultDialTimeout when 0).
	DialTimeout time.Duration
	// Logger receives operational messages (not decisions); nil discards.
	Logger *slog.Logger
	// Secrets are the vault's credentials (see Secret). A CONNECT to a
	// host that one of them belongs to is intercepted: the proxy ends TLS
	// with a leaf from CA and puts the secret's value in place of its
	// placeholder. A placeholder sent anywhere else is refused. Needs CA.
	Secrets []Secret
	// CA issues the leaves of intercepted connections; required when
	// Secrets is not empty.
	CA *CA
}

// ErrClosed is returned by Serve on a proxy that was closed before.
var ErrClosed = errors.New("egress proxy closed")

// Proxy is an HTTP proxy that enforces a Policy: CONNECT tunnels whose TLS
// ClientHello must name the CONNECT host, and plain http:// forwarding.
// Every destination address is checked (Policy.CheckAddress) before it is
// dialled, and the dial goes to that checked address, never to a name
// resolved again. The policy can be swapped while serving (SetPolicy).
type Proxy struct {
	o         Options
	pol       atomic.Pointer[Policy]
	secrets   atomic.Pointer[[]Secret]
	roots     *x509.CertPool // system roots, nil when unavailable
	log       decisionLog
	srv       *http.Server
	transport *http.Transport
	rp        *httputil.ReverseProxy
	sem       chan struct{}

	mu      sync.Mutex
	closed  bool
	tunnels map[net.Conn]struct{}
	// active counts handlers running; Add only under mu while !closed.
	active sync.WaitGroup
}

// closeWait bounds how long Close waits for handlers to write their log
// entries.
const closeWait = 5 * time.Second

// New makes a Proxy from o. It starts nothing: call Serve.
func New(o Options) (*Proxy, error) {
	if o.MaxConns < 0 || o.IdleTimeout < 0 || o.HeaderTimeout < 0 || o.DialTimeout < 0 {
		return nil, &errdefs.ConfigError{Key: "egress proxy options", Reason: errdefs.ErrInvalidValue,
			Msg: "MaxConns and the timeouts may not be negative; 0 takes the default"}
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.HeaderTimeout == 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.Dial == nil {
		d := &net.Dialer{KeepAlive: 30 * time.Second}
		o.Dial = d.DialContext
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if err := validateSecrets(o.Secrets); err != nil {
		return nil, &errdefs.ConfigError{Key: "egress proxy secrets", Reason: errdefs.ErrInvalidValue, Msg: err.Error()}
	}
	if len(o.Secrets) > 0 && o.CA == nil {
		return nil, &errdefs.ConfigError{Key: "egress proxy CA", Reason: errdefs.ErrMissingRequired,
			Msg: "secrets need a CA to intercept their hosts"}
	}
	p := &Proxy{o: o, sem: make(chan struct{}, o.MaxConns), tunnels: map[net.Conn]struct{}{}}
	ss := cloneSecrets(o.Secrets)
	p.secrets.Store(&ss)
	p.o.Secrets = nil // the live set is p.secrets
	if o.CA != nil {
		p.roots, _ = x509.SystemCertPool() // nil when the system has none: UpstreamRoots alone
	}
	p.log = decisionLog{w: o.Log, logger: o.Logger}
	pol := o.Policy
	if pol == nil {
		pol = &Policy{}
	}
	p.pol.Store(pol)
	p.transport = &http.Transport{
		Proxy:                  nil, // never chain to the environment's proxy
		DialContext:            p.dialChecked,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		ResponseHeaderTimeout:  o.IdleTimeout,
		DisableCompression:     true,
		TLSClientConfig:        &tls.Config{RootCAs: o.UpstreamRoots, MinVersion: tls.VersionTLS12},
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        rewrite,
		Transport:      p.transport,
		FlushInterval:  -1,
		ModifyResponse: func(r *http.Response) error { stripProxyHeaders(r.Header); return nil },
		ErrorHandler:   p.forwardError,
		ErrorLog:       slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug),
	}
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serveHTTP),
		ReadHeaderTimeout: o.HeaderTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug),
	}
	return p, nil
}

// Serve accepts proxy clients on ln until Close, then returns nil. It may
// be called for several listeners at once.
func (p *Proxy) Serve(ln net.Listener) error {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		ln.Close()
		return ErrClosed
	}
	err := p.srv.Serve(&limitListener{Listener: ln, p: p})
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// SetPolicy swaps the policy atomically. New tunnels and new requests,
// also on kept-alive connections, see it; tunnels already open are not
// cut. Pooled upstream connections are dropped, so no request reuses a
// connection that an earlier policy allowed.
func (p *Proxy) SetPolicy(pol *Policy) {
	if pol == nil {
		pol = &Policy{}
	}
	p.pol.Store(pol)
	p.transport.CloseIdleConnections()
}

// SetSecrets swaps the vault's secrets atomically (a refreshed token, a
// changed value): the next request sees them, also on a connection that
// is already intercepted. Which hosts are intercepted is decided when a
// CONNECT arrives. The secrets are validated first (errors never hold a
// value); with secrets, the proxy needs a CA.
func (p *Proxy) SetSecrets(ss []Secret) error {
	if err := validateSecrets(ss); err != nil {
		return &errdefs.ConfigError{Key: "egress proxy secrets", Reason: errdefs.ErrInvalidValue, Msg: err.Error()}
	}
	if len(ss) > 0 && p.o.CA == nil {
		return &errdefs.ConfigError{Key: "egress proxy CA", Reason: errdefs.ErrMissingRequired,
			Msg: "secrets need a CA to intercept their hosts"}
	}
	c := cloneSecrets(ss)
	p.secrets.Store(&c)
	return nil
}

// liveSecrets returns the secrets in force; the caller must not change
// them.
func (p *Proxy) liveSecrets() []Secret { return *p.secrets.Load() }

// Policy returns the policy in force. The caller must not change it; use
// Clone and SetPolicy.
func (p *Proxy) Policy() *Policy { return p.pol.Load() }

// Close stops every Serve, closes every client connection and tunnel,
// drops pooled upstream connections, and waits (a few seconds at most) for
// the handlers to write their last log entries.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	open := p.tunnels
	p.tunnels = map[net.Conn]struct{}{}
	p.mu.Unlock()
	err := p.srv.Close()
	for c := range open {
		c.Close()
	}
	p.transport.CloseIdleConnections()
	done := make(chan struct{})
	go func() { p.active.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeWait):
	}
	return err
}

// track registers a connection taken over from the HTTP server, so Close
// reaches it; it reports false (and the caller must close) after Close.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.tunnels[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.tunnels, c)
	}
}

// serveHTTP dispatches CONNECT and absolute-form http:// requests; any
// other request gets 400.
func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		http.Error(w, "podbot egress proxy: shutting down", http.StatusServiceUnavailable)
		return
	}
	p.active.Add(1)
	p.mu.Unlock()
	defer p.active.Done()
	switch {
	case r.Method == http.MethodConnect:
		p.connect(w, r)
	case r.URL.Scheme == "http" && r.URL.Host != "":
		p.forward(w, r)
	case r.URL.Scheme != "" && r.URL.Host != "":
		http.Error(w, "podbot egress proxy: only http:// URLs are forwarded; use CONNECT for https", http.StatusBadRequest)
	default:
		http.Error(w, "podbot egress proxy: expected CONNECT host:port or an absolute http:// URL", http.StatusBadRequest)
	}
}

// refusal is a destination the policy refuses.
type refusal struct {
	rule, reason string
}

func (e *refusal) Error() string { return e.reason }

// admit decides host:port under pol and returns the checked addresses to
// dial: by name first, then every address (pinned, literal or resolved)
// through CheckAddress. One internal address among several refuses all.
func (p *Proxy) admit(ctx context.Context, pol *Policy, host string, port int) (Decision, []netip.AddrPort, error) {
	dec := pol.Decide(host, port)
	if !dec.Allowed {
		return dec, nil, &refusal{rule: dec.Rule, reason: dec.Reason}
	}
	addrs, err := p.resolve(ctx, pol, host, port)
	if err != nil {
		return dec, nil, &refusal{rule: dec.Rule, reason: err.Error()}
	}
	for _, a := range addrs {
		if err := pol.CheckAddress(host, port, a.Addr()); err != nil {
			return dec, nil, &refusal{rule: dec.Rule, reason: err.Error()}
		}
	}
	return dec, addrs, nil
}

// resolve returns the addresses host:port is reached at: a network.resolve
// pin (whose port, if any, replaces port), the host itself when it is an
// IP, else the resolver's answer.
func (p *Proxy) resolve(ctx context.Context, pol *Policy, host string, port int) ([]netip.AddrPort, error) {
	if pin, ok := pol.Pinned(host); ok {
		if ap, err := netip.ParseAddrPort(pin); err == nil {
			return []netip.AddrPort{netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())}, nil
		}
		a, err := netip.ParseAddr(pin)
		if err != nil {
			return nil, fmt.Errorf("the pin for %s is not an address", host)
		}
		return []netip.AddrPort{netip.AddrPortFrom(a.Unmap(), uint16(port))}, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.AddrPort{netip.AddrPortFrom(a.Unmap(), uint16(port))}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.o.DialTimeout)
	defer cancel()
	ips, err := p.o.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve %s: %v", host, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("%s has no address", host)
	}
	if len(ips) > maxAddrs {
		ips = ips[:maxAddrs]
	}
	out := make([]netip.AddrPort, len(ips))
	for i, a := range ips {
		out[i] = netip.AddrPortFrom(a.Unmap(), uint16(port))
	}
	return out, nil
}

// dialAny connects to the first of addrs that answers.
func (p *Proxy) dialAny(ctx context.Context, addrs []netip.AddrPort) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, p.o.DialTimeout)
	defer cancel()
	var firstErr error
	for _, a := range addrs {
		c, err := p.o.Dial(ctx, "tcp", a.String())
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if firstErr == nil {
		firstErr = errors.New("no address to dial")
	}
	return nil, firstErr
}

// deny logs a refusal and answers 403 with its reason.
func (p *Proxy) deny(w http.ResponseWriter, e LogEntry, ref *refusal) {
	e.Decision, e.Rule, e.Reason = DecisionDeny, ref.rule, ref.reason
	e.Time = time.Now().UTC()
	p.log.write(e)
	w.Header().Set("Connection", "close")
	http.Error(w, "podbot egress proxy refused: "+ref.reason, http.StatusForbidden)
}

// connect serves a CONNECT request: a tunnel to a checked address whose
// first bytes must be a TLS ClientHello naming the CONNECT host.
//
// Every CONNECT must carry TLS, on any port: a tunnel of plain bytes would
// let a client send a Host header of its choosing to a shared address
// (domain fronting in clear text). Plain HTTP goes through forwarding,
// where the proxy itself sets the Host.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := SplitHostPort(r.Host, 443)
	if err != nil {
		http.Error(w, "podbot egress proxy: bad CONNECT target", http.StatusBadRequest)
		return
	}
	entry := LogEntry{Host: host, Port: port, Method: http.MethodConnect}
	secrets := p.liveSecrets()
	if m := findMisuse(secrets, host, port, r.Header, ""); m != nil {
		p.deny(w, entry, &refusal{reason: m.Error()})
		return
	}
	pol := p.Policy()
	dec, addrs, err := p.admit(r.Context(), pol, host, port)
	var ref *refusal
	if errors.As(err, &ref) {
		p.deny(w, entry, ref)
		return
	}
	entry.Rule = dec.Rule
	intercept := false
	for i := range secrets {
		if secrets[i].belongs(host, port) {
			intercept = true
		}
	}
	upstream, err := p.dialAny(r.Context(), addrs)
	if err != nil {
		entry.Decision, entry.Reason, entry.Time = DecisionAllow, dec.Reason+"; upstream unreachable: "+err.Error(), time.Now().UTC()
		p.log.write(entry)
		http.Error(w, "podbot egress proxy: upstream unreachable", http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "podbot egress proxy: cannot tunnel on this connection", http.StatusInternalServerError)
		return
	}
	client, brw, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if !p.track(client, upstream) {
		client.Close()
		upstream.Close()
		return
	}
	defer func() {
		client.Close()
		upstream.Close()
		p.untrack(client, upstream)
	}()
	var early []byte // bytes the client sent before our answer
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		early = append([]byte(nil), b...)
	}
	client.SetDeadline(time.Now().Add(p.o.HeaderTimeout))
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	if intercept {
		p.intercept(r.Context(), &earlyConn{Conn: client, early: early}, upstream, host, port, dec)
		return
	}
	hello, sni, err := ReadClientHello(io.MultiReader(bytesReader(early), client), MaxClientHelloBytes)
	client.SetDeadline(time.Time{})
	if reason := checkSNI(host, sni, err); reason != "" {
		entry.Decision, entry.Reason, entry.Time = DecisionDeny, reason, time.Now().UTC()
		p.log.write(entry)
		return
	}
	up, down := int64(0), int64(0)
	upstream.SetWriteDeadline(time.Now().Add(p.o.IdleTimeout))
	n, err := upstream.Write(hello)
	up += int64(n)
	if err == nil {
		u, d := splice(client, upstream, p.o.IdleTimeout)
		up, down = up+u, d
	}
	entry.Decision, entry.Reason, entry.BytesUp, entry.BytesDown, entry.Time = DecisionAllow, dec.Reason, up, down, time.Now().UTC()
	p.log.write(entry)
}

// checkSNI returns why a tunnel to host with ClientHello server name sni
// (read with error err) is refused, or "" to allow it. A name target needs
// that same name in SNI; an IP target needs no SNI at all.
func checkSNI(host, sni string, err error) string {
	if err != nil {
		return "the tunnel did not start with a TLS ClientHello: " + err.Error()
	}
	if _, ipErr := netip.ParseAddr(host); ipErr == nil {
		if sni != "" {
			return "a tunnel to an IP address may not carry a TLS server name (SNI)"
		}
		return ""
	}
	if sni == "" {
		return "the TLS ClientHello names no server (SNI); it must name " + host
	}
	if n, ok := NormalizeHost(sni); !ok || n != host {
		return "the TLS server name (SNI) does not match the CONNECT host " + host
	}
	return ""
}

// reqState carries a forwarded request's checked addresses to the dialer
// and its upstream error back to the log.
type reqState struct {
	addrs []netip.AddrPort
	err   error
}

type reqStateKey struct{}

// forward serves an absolute-form http:// request through the shared
// transport. It dials the first address admit checked, and only that one:
// unlike a tunnel, a forwarded request does not fall back to a name's
// other addresses.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	host, port, err := SplitHostPort(r.URL.Host, 80)
	if err != nil {
		http.Error(w, "podbot egress proxy: bad host in URL", http.StatusBadRequest)
		return
	}
	entry := LogEntry{Host: host, Port: port, Method: r.Method}
	if m := findMisuse(p.liveSecrets(), host, port, r.Header, r.URL.String()); m != nil {
		p.deny(w, entry, &refusal{reason: m.Error()})
		return
	}
	dec, addrs, err := p.admit(r.Context(), p.Policy(), host, port)
	var ref *refusal
	if errors.As(err, &ref) {
		p.deny(w, entry, ref)
		return
	}
	// The request line's URL decides; the client's Host header is ignored.
	r.Host = r.URL.Host
	st := &reqState{addrs: addrs}
	r = r.WithContext(context.WithValue(r.Context(), reqStateKey{}, st))
	var body *countingReader
	if r.Body != nil && r.Body != http.NoBody {
		body = &countingReader{r: r.Body}
		r.Body = body
	}
	cw := &countingWriter{ResponseWriter: w}
	p.rp.ServeHTTP(cw, r)
	entry.Decision, entry.Rule, entry.Reason = DecisionAllow, dec.Rule, dec.Reason
	if st.err != nil {
		entry.Reason += "; upstream: " + st.err.Error()
	}
	if body != nil {
		entry.BytesUp = body.n
	}
	entry.BytesDown, entry.Time = cw.n, time.Now().UTC()
	p.log.write(entry)
}

// dialChecked is the forwarding transport's dialer. rewrite put the
// checked address in the URL, so the transport's pool is keyed by address:
// a pooled connection is only reused for a request whose own check gave
// that same address. The dial goes to addr only if it is among this
// request's checked addresses.
func (p *Proxy) dialChecked(ctx context.Context, network, addr string) (net.Conn, error) {
	st, _ := ctx.Value(reqStateKey{}).(*reqState)
	ap, err := netip.ParseAddrPort(addr)
	if st == nil || err != nil || !slices.Contains(st.addrs, ap) {
		return nil, errors.New("no checked address for this request")
	}
	return p.dialAny(ctx, []netip.AddrPort{ap})
}

func (p *Proxy) forwardError(w http.ResponseWriter, r *http.Request, err error) {
	if st, _ := r.Context().Value(reqStateKey{}).(*reqState); st != nil {
		st.err = err
	}
	http.Error(w, "podbot egress proxy: upstream failed", http.StatusBadGateway)
}

// rewrite prepares a forwarded request: ReverseProxy already dropped the
// hop-by-hop headers; any Proxy-* header goes too. The Host is the
// request line's (never the client's Host header), and the URL names the
// first checked address, which is the one dialled.
func rewrite(pr *httputil.ProxyRequest) {
	pr.Out.Host = pr.In.URL.Host
	pr.Out.URL.Host = "checked-address.invalid" // no dial without a check
	if st, _ := pr.In.Context().Value(reqStateKey{}).(*reqState); st != nil && len(st.addrs) > 0 {
		pr.Out.URL.Host = st.addrs[0].String()
	}
	stripProxyHeaders(pr.Out.Header)
}

func stripProxyHeaders(h http.Header) {
	for k := range h {
		if len(k) >= 6 && strings.EqualFold(k[:6], "proxy-") {
			delete(h, k)
		}
	}
}

type countingReader struct {
	r io.ReadCloser
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }

type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach Flush and Hijack.
func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// limitListener admits at most MaxConns client connections at once.
type limitListener struct {
	net.Listener
	p *Proxy
}

const busyBody = "podbot egress proxy: too many connections; retry later\n"

var busyResponse = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: " +
	strconv.Itoa(len(busyBody)) + "\r\n\r\n" + busyBody

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.p.sem <- struct{}{}:
			return &limitConn{Conn: c, sem: l.p.sem}, nil
		default:
			l.p.o.Logger.Warn("egress proxy at its connection cap; refusing a client", "max_conns", strconv.Itoa(l.p.o.MaxConns))
			c.SetWriteDeadline(time.Now().Add(time.Second))
			io.WriteString(c, busyResponse)
			c.Close()
		}
	}
}

// limitConn gives its slot back once, when closed.
type limitConn struct {
	net.Conn
	sem  chan struct{}
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.sem })
	return err
}

// CloseWrite half-closes the connection where the transport allows it.
func (c *limitConn) CloseWrite() error { return closeWrite(c.Conn) }
