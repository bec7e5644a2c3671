package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podbot/podbot/errdefs"
)

// syncBuffer is a log sink safe to read while the proxy writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) entries(t *testing.T) []LogEntry {
	t.Helper()
	s.mu.Lock()
	data := append([]byte(nil), s.b.Bytes()...)
	s.mu.Unlock()
	var out []LogEntry
	if err := ReadLog(bytes.NewReader(data), func(e LogEntry) error { out = append(out, e); return nil }); err != nil {
		t.Fatalf("ReadLog: %v", err)
	}
	return out
}

// waitEntry waits for a log entry that match accepts.
func (s *syncBuffer) waitEntry(t *testing.T, match func(LogEntry) bool) LogEntry {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, e := range s.entries(t) {
			if match(e) {
				return e
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no matching log entry in:\n%s", s.b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fakeResolver answers from a map, like a DNS server an attacker controls.
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

type testProxy struct {
	*Proxy
	addr string
	log  *syncBuffer
}

func startProxy(t testing.TB, pol *Policy, o Options) *testProxy {
	t.Helper()
	buf := &syncBuffer{}
	o.Policy = pol
	o.Log = buf
	if o.Resolver == nil {
		o.Resolver = fakeResolver{}
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(ln) }()
	t.Cleanup(func() {
		p.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &testProxy{Proxy: p, addr: ln.Addr().String(), log: buf}
}

func (tp *testProxy) client(roots *x509.CertPool) *http.Client {
	u := &url.URL{Scheme: "http", Host: tp.addr}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(u),
		TLSClientConfig: &tls.Config{RootCAs: roots},
	}}
}

func mustRules(t testing.TB, rules ...string) []Rule {
	t.Helper()
	var out []Rule
	for _, s := range rules {
		r, err := ParseRule(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// outside starts a TLS server standing for a host on the internet. Its
// certificate is valid for example.com and 127.0.0.1.
func outside(t testing.TB) (*httptest.Server, *x509.CertPool, int, *atomic.Int64) {
	t.Helper()
	hits := new(atomic.Int64)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "hello from outside %s", r.URL.Path)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	return srv, roots, port, hits
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestConnectAllowedIsLogged(t *testing.T) {
	_, roots, port, _ := outside(t)
	pol := &Policy{Rules: mustRules(t, "example.com"), Resolve: map[string]string{"example.com": "127.0.0.1:" + strconv.Itoa(port)}}
	tp := startProxy(t, pol, Options{})
	c := tp.client(roots)
	code, body := get(t, c, "https://example.com/hello")
	if code != 200 || body != "hello from outside /hello" {
		t.Fatalf("through the proxy: %d %q", code, body)
	}
	c.CloseIdleConnections()
	e := tp.log.waitEntry(t, func(e LogEntry) bool { return e.Method == "CONNECT" })
	if e.Decision != DecisionAllow || e.Host != "example.com" || e.Port != 443 || e.Rule != "example.com" || e.BytesUp == 0 || e.BytesDown == 0 || e.Time.IsZero() {
		t.Fatalf("log entry %+v", e)
	}
}

// rawConnect sends a CONNECT by hand and returns the proxy's answer and
// the connection.
func rawConnect(t *testing.T, proxyAddr, target string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxyAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	return resp, c, br
}

func TestConnectDeniedHost(t *testing.T) {
	_, _, port, hits := outside(t)
	pol := &Policy{Rules: mustRules(t, "example.com"), Resolve: map[string]string{"evil.example": "127.0.0.1:" + strconv.Itoa(port)}}
	tp := startProxy(t, pol, Options{})
	resp, _, _ := rawConnect(t, tp.addr, "evil.example:443")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "no rule allows evil.example") {
		t.Fatalf("denied CONNECT: %d %q", resp.StatusCode, body)
	}
	e := tp.log.waitEntry(t, func(e LogEntry) bool { return e.Host == "evil.example" })
	if e.Decision != DecisionDeny || e.Method != "CONNECT" || e.Port != 443 {
		t.Fatalf("log entry %+v", e)
	}
	if hits.Load() != 0 {
		t.Fatal("the outside server was reached")
	}
	// Live denies win over rules.
	pol2 := pol.Clone()
	pol2.Deny = mustRules(t, "example.com")
	tp.SetPolicy(pol2)
	resp, _, _ = rawConnect(t, tp.addr, "example.com:443")
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("CONNECT to a live-denied host: %d", resp.StatusCode)
	}
}

// The attacker: CONNECT to an allowed host, then a ClientHello for another
// (domain fronting), no SNI at all, or no TLS at all.
func TestConnectSNIMustMatch(t *testing.T) {
	_, roots, port, hits := outside(t)
	pol := &Policy{Rules: mustRules(t, "example.com"), Resolve: map[string]string{"example.com": "127.0.0.1:" + strconv.Itoa(port)}}
	tp := startProxy(t, pol, Options{HeaderTimeout: time.Second})
	for _, tc := range []struct {
		name, sni string
		plain     bool
	}{
		{name: "fronted", sni: "evil.example"},
		{name: "no SNI", sni: ""},
		{name: "not TLS", plain: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, c, br := rawConnect(t, tp.addr, "example.com:443")
			if resp.StatusCode != 200 {
				t.Fatalf("CONNECT: %d", resp.StatusCode)
			}
			if tc.plain {
				io.WriteString(c, "GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n")
				if b, err := io.ReadAll(br); len(b) != 0 {
					t.Fatalf("plain bytes through a tunnel got an answer: %q %v", b, err)
				}
			} else {
				tc := tls.Client(&bufConn{Conn: c, r: br}, &tls.Config{ServerName: tc.sni, RootCAs: roots, InsecureSkipVerify: tc.sni == ""})
				if err := tc.Handshake(); err == nil {
					t.Fatal("handshake with a mismatched SNI succeeded")
				}
			}
		})
	}
	entries := tp.log.entries(t)
	denies := 0
	for _, e := range entries {
		if e.Decision == DecisionDeny && e.Method == "CONNECT" {
			denies++
		}
	}
	if denies != 3 || hits.Load() != 0 {
		t.Fatalf("want 3 deny entries and no hit, got %d, %d hits: %+v", denies, hits.Load(), entries)
	}
}

type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// A CONNECT to an IP literal that a rule names exactly works without SNI,
// and a ClientHello sent before the 200 (early) is replayed.
func TestConnectIPLiteral(t *testing.T) {
	srv, roots, port, _ := outside(t)
	tp := startProxy(t, &Policy{Rules: mustRules(t, "127.0.0.1:"+strconv.Itoa(port))}, Options{})
	code, body := get(t, tp.client(roots), srv.URL+"/ip")
	if code != 200 || body != "hello from outside /ip" {
		t.Fatalf("%d %q", code, body)
	}
	// A wildcard port on another address is no licence.
	tp.SetPolicy(&Policy{Rules: mustRules(t, "127.0.0.2:"+strconv.Itoa(port))})
	resp, _, _ := rawConnect(t, tp.addr, "127.0.0.1:"+strconv.Itoa(port))
	if resp.StatusCode != 403 {
		t.Fatalf("unlisted IP: %d", resp.StatusCode)
	}
}

// The attacker controls DNS for a name a wildcard allows and points it at
// the host's loopback, the cloud metadata address, or a mix.
func TestRebindingRefused(t *testing.T) {
	_, _, port, hits := outside(t)
	p := strconv.Itoa(port)
	res := fakeResolver{
		"outside.corp.test": {netip.MustParseAddr("127.0.0.1")},
		"meta.corp.test":    {netip.MustParseAddr("169.254.169.254")},
		"mixed.corp.test":   {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("127.0.0.1")},
		"v6.corp.test":      {netip.MustParseAddr("::ffff:127.0.0.1")},
		"ula.corp.test":     {netip.MustParseAddr("fd00::1")},
		"lan.corp.test":     {netip.MustParseAddr("192.168.1.1")},
	}
	tp := startProxy(t, &Policy{Rules: mustRules(t, "*.corp.test:"+p)}, Options{Resolver: res})
	for _, h := range []string{"outside.corp.test", "meta.corp.test", "mixed.corp.test", "v6.corp.test", "ula.corp.test", "lan.corp.test"} {
		resp, _, _ := rawConnect(t, tp.addr, h+":"+p)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 403 || !strings.Contains(string(body), "internal address") {
			t.Errorf("%s under *.test: %d %q", h, resp.StatusCode, body)
		}
		c := tp.client(nil)
		resp2, err := c.Get("http://" + h + ":" + p + "/")
		if err != nil || resp2.StatusCode != 403 {
			t.Errorf("plain http to %s: %v %v", h, resp2, err)
		} else {
			resp2.Body.Close()
		}
	}
	if hits.Load() != 0 {
		t.Fatal("an internal address was reached through a wildcard")
	}
	// A rule naming the host exactly opts in.
	tp.SetPolicy(&Policy{Rules: mustRules(t, "*.corp.test:"+p, "outside.corp.test:"+p)})
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(&url.URL{Scheme: "http", Host: tp.addr}),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test cert does not name outside.corp.test
	}}
	code, body := get(t, c, "https://outside.corp.test:"+p+"/exact")
	if code != 200 || body != "hello from outside /exact" {
		t.Fatalf("exact rule: %d %q", code, body)
	}
}

func plainServer(t *testing.T) (*httptest.Server, int) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var leaked []string
		for k := range r.Header {
			if strings.HasPrefix(strings.ToLower(k), "proxy-") {
				leaked = append(leaked, k)
			}
		}
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "host=%s path=%s body=%d leaked=%v", r.Host, r.URL.Path, len(b), leaked)
	}))
	t.Cleanup(srv.Close)
	return srv, srv.Listener.Addr().(*net.TCPAddr).Port
}

func TestForwardPlainHTTP(t *testing.T) {
	_, port := plainServer(t)
	p := strconv.Itoa(port)
	pol := &Policy{Rules: mustRules(t, "plain.test:"+p), Resolve: map[string]string{"plain.test": "127.0.0.1", "other.test": "127.0.0.1"}}
	tp := startProxy(t, pol, Options{})
	c := tp.client(nil)
	req, _ := http.NewRequest("POST", "http://plain.test:"+p+"/up", strings.NewReader("12345"))
	req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
	req.Header.Set("Proxy-Whatever", "x")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := "host=plain.test:" + p + " path=/up body=5 leaked=[]"
	if resp.StatusCode != 200 || string(b) != want {
		t.Fatalf("forwarded: %d %q, want %q", resp.StatusCode, b, want)
	}
	e := tp.log.waitEntry(t, func(e LogEntry) bool { return e.Method == "POST" })
	if e.Decision != DecisionAllow || e.Host != "plain.test" || e.Port != port || e.BytesUp != 5 || e.BytesDown != int64(len(want)) {
		t.Fatalf("log entry %+v", e)
	}
	if strings.Contains(tp.log.b.String(), "c2VjcmV0") {
		t.Fatal("a header value reached the log")
	}
	code, _ := get(t, c, "http://other.test:"+p+"/")
	if code != 403 {
		t.Fatalf("denied host: %d", code)
	}
	tp.log.waitEntry(t, func(e LogEntry) bool { return e.Host == "other.test" && e.Decision == DecisionDeny })

	// The Host header cannot redirect a forwarded request.
	conn, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET http://plain.test:%s/fronted HTTP/1.1\r\nHost: other.test\r\n\r\n", p)
	resp, err = http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	if !strings.HasPrefix(string(b), "host=plain.test:"+p+" ") {
		t.Fatalf("Host header fronting: %q", b)
	}
}

func TestNotAProxyRequest(t *testing.T) {
	tp := startProxy(t, &Policy{Rules: mustRules(t, "example.com")}, Options{})
	for _, line := range []string{"GET /local HTTP/1.1", "GET https://example.com/ HTTP/1.1", "CONNECT bad_host!:443 HTTP/1.1"} {
		conn, err := net.Dial("tcp", tp.addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "%s\r\nHost: example.com\r\n\r\n", line)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		conn.Close()
		if err != nil || resp.StatusCode != 400 {
			t.Errorf("%q: %v %v", line, resp, err)
		}
	}
}

func TestSetPolicyNextRequest(t *testing.T) {
	_, port := plainServer(t)
	p := strconv.Itoa(port)
	pol := &Policy{Rules: mustRules(t, "plain.test:"+p), Resolve: map[string]string{"plain.test": "127.0.0.1"}}
	tp := startProxy(t, pol, Options{})
	conn, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	do := func() int {
		fmt.Fprintf(conn, "GET http://plain.test:%s/ HTTP/1.1\r\nHost: plain.test\r\n\r\n", p)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := do(); code != 200 {
		t.Fatalf("before: %d", code)
	}
	tp.SetPolicy(&Policy{})
	if code := do(); code != 403 {
		t.Fatalf("after SetPolicy, same connection: %d", code)
	}
	if len(tp.Policy().Rules) != 0 {
		t.Fatal("Policy() does not return the new policy")
	}
}

func TestMaxConns(t *testing.T) {
	tp := startProxy(t, &Policy{}, Options{MaxConns: 2})
	var held []net.Conn
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", tp.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		br := bufio.NewReader(c)
		io.WriteString(c, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 400 {
			t.Fatalf("conn %d: %v %v", i, resp, err)
		}
		held = append(held, c)
	}
	over := func() (int, error) {
		c, err := net.Dial("tcp", tp.addr)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, err
		}
		return resp.StatusCode, nil
	}
	if code, err := over(); code != 503 {
		t.Fatalf("third connection: %d %v", code, err)
	}
	held[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", tp.addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err == nil && resp.StatusCode == 400 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a slot was not given back: %v %v", resp, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Slowloris: headers that never end, and a tunnel whose ClientHello never
// comes, are closed after HeaderTimeout.
func TestHeaderTimeout(t *testing.T) {
	_, _, port, _ := outside(t)
	pol := &Policy{Rules: mustRules(t, "example.com"), Resolve: map[string]string{"example.com": "127.0.0.1:" + strconv.Itoa(port)}}
	tp := startProxy(t, pol, Options{HeaderTimeout: 200 * time.Millisecond})
	c, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX-Slow: ")
	c.SetDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	b, err := io.ReadAll(c)
	if err != nil || time.Since(start) > 3*time.Second {
		t.Fatalf("slow headers: %q %v after %v", b, err, time.Since(start))
	}
	resp, tc, br := rawConnect(t, tp.addr, "example.com:443")
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	start = time.Now()
	if b, err := io.ReadAll(br); err != nil || len(b) != 0 || time.Since(start) > 3*time.Second {
		t.Fatalf("silent tunnel: %q %v after %v", b, err, time.Since(start))
	}
	tc.Close()
	tp.log.waitEntry(t, func(e LogEntry) bool {
		return e.Method == "CONNECT" && e.Decision == DecisionDeny && strings.Contains(e.Reason, "ClientHello")
	})
}

func TestIdleTunnelClosed(t *testing.T) {
	_, roots, port, _ := outside(t)
	pol := &Policy{Rules: mustRules(t, "example.com"), Resolve: map[string]string{"example.com": "127.0.0.1:" + strconv.Itoa(port)}}
	tp := startProxy(t, pol, Options{IdleTimeout: 300 * time.Millisecond})
	resp, c, br := rawConnect(t, tp.addr, "example.com:443")
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	tc := tls.Client(&bufConn{Conn: c, r: br}, &tls.Config{ServerName: "example.com", RootCAs: roots})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	tc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := tc.Read(make([]byte, 1)); err == nil || time.Since(start) > 3*time.Second {
		t.Fatalf("idle tunnel: %v after %v", err, time.Since(start))
	}
}

func TestOversizeHeaders(t *testing.T) {
	tp := startProxy(t, &Policy{Rules: mustRules(t, "example.com")}, Options{})
	c, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go fmt.Fprintf(c, "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 64<<10))
	c.SetDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("oversize headers: %v %v", resp, err)
	}
}

func TestCloseEndsTunnels(t *testing.T) {
	_, roots, port, _ := outside(t)
	pol := &Policy{Rules: mustRules(t, "example.com"), Resolve: map[string]string{"example.com": "127.0.0.1:" + strconv.Itoa(port)}}
	p, err := New(Options{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(ln) }()
	resp, c, br := rawConnect(t, ln.Addr().String(), "example.com:443")
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	tc := tls.Client(&bufConn{Conn: c, r: br}, &tls.Config{ServerName: "example.com", RootCAs: roots})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	p.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
	tc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := tc.Read(make([]byte, 1)); err == nil || errors.Is(err, errDeadline) {
		t.Fatalf("tunnel still open after Close: %v", err)
	}
	if err := p.Serve(ln); !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve on a closed proxy: %v", err)
	}
}

var errDeadline = errors.New("i/o timeout")

func TestNewRejectsNegative(t *testing.T) {
	if _, err := New(Options{MaxConns: -1}); !errors.Is(err, errdefs.ErrInvalidValue) {
		t.Fatal("negative MaxConns accepted")
	}
}

// eagerConn lets a TLS client send its ClientHello right behind the
// CONNECT, before the proxy answers, reading the answer on first Read.
type eagerConn struct {
	net.Conn
	br   *bufio.Reader
	once sync.Once
	err  error
}

func (e *eagerConn) Read(p []byte) (int, error) {
	e.once.Do(func() {
		resp, err := http.ReadResponse(e.br, &http.Request{Method: "CONNECT"})
		if err == nil && resp.StatusCode != 200 {
			err = errors.New(resp.Status)
		}
		e.err = err
	})
	if e.err != nil {
		return 0, e.err
	}
	return e.br.Read(p)
}

func TestConnectEagerClientHello(t *testing.T) {
	_, roots, port, _ := outside(t)
	pol := &Policy{Rules: mustRules(t, "example.com"), Resolve: map[string]string{"example.com": "127.0.0.1:" + strconv.Itoa(port)}}
	tp := startProxy(t, pol, Options{})
	c, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
	tc := tls.Client(&eagerConn{Conn: c, br: bufio.NewReader(c)}, &tls.Config{ServerName: "example.com", RootCAs: roots})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("eager ClientHello: %v", err)
	}
	io.WriteString(tc, "GET /eager HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "hello from outside /eager" {
		t.Fatalf("%q", b)
	}
}

// A connection to an address an earlier policy allowed must not serve a
// request under a later policy that sends the name elsewhere, even when it
// was busy (so not dropped) at the swap.
func TestForwardPoolFollowsPolicy(t *testing.T) {
	mk := func(name string, delay time.Duration) int {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(delay)
			io.WriteString(w, name)
		}))
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().(*net.TCPAddr).Port
	}
	old, cur, other := mk("old", 300*time.Millisecond), mk("new", 0), mk("other", 0)
	pin := func(port int) *Policy {
		return &Policy{Rules: mustRules(t, "plain.test", "other.test"), Resolve: map[string]string{
			"plain.test": "127.0.0.1:" + strconv.Itoa(port), "other.test": "127.0.0.1:" + strconv.Itoa(other)}}
	}
	tp := startProxy(t, pin(old), Options{})
	c := tp.client(nil)
	done := make(chan string, 1)
	go func() {
		resp, err := c.Get("http://plain.test/")
		if err != nil {
			done <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- string(b)
	}()
	time.Sleep(100 * time.Millisecond) // the request is at the old server
	tp.SetPolicy(pin(cur))
	// Another request while the old connection is busy: the transport then
	// pools connections again.
	if _, body := get(t, tp.client(nil), "http://other.test/"); body != "other" {
		t.Fatalf("other: %q", body)
	}
	if got := <-done; got != "old" {
		t.Fatalf("first request: %q", got)
	}
	// A second client connection, so the proxy's side decides.
	c2 := tp.client(nil)
	if _, body := get(t, c2, "http://plain.test/"); body != "new" {
		t.Fatalf("after the swap the request went to %q", body)
	}
}

// The request line decides a CONNECT's target, not the Host header.
func TestConnectHostHeaderIgnored(t *testing.T) {
	_, _, port, hits := outside(t)
	pol := &Policy{Rules: mustRules(t, "example.com"), Resolve: map[string]string{"example.com": "127.0.0.1:" + strconv.Itoa(port), "evil.example": "127.0.0.1:" + strconv.Itoa(port)}}
	tp := startProxy(t, pol, Options{})
	c, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "CONNECT evil.example:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 403 || hits.Load() != 0 {
		t.Fatalf("CONNECT evil.example with Host example.com: %v %v", resp, err)
	}
}
