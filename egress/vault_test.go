package egress

import (
	"bufio"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Values of the test secrets: what must reach only their own hosts.
const (
	apiValue = "sk-ant-REALVALUE-0123456789"
	gitValue = "ghs_REALTOKEN_abcdefghij"
)

// seenReq is what the outside server saw of one request.
type seenReq struct {
	host   string
	header http.Header
	body   string
}

// recorder records every request an outside server sees.
type recorder struct {
	mu   sync.Mutex
	reqs []seenReq
}

func (r *recorder) add(s seenReq) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, s)
}

func (r *recorder) all() []seenReq {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seenReq(nil), r.reqs...)
}

// dump renders everything the server saw, to grep for values.
func (r *recorder) dump() string {
	var b strings.Builder
	for _, s := range r.all() {
		fmt.Fprintf(&b, "%s %v %s\n", s.host, s.header, s.body)
	}
	return b.String()
}

// vaultOutside starts a TLS server for several names, with certificates
// from a test CA of its own (upstream roots), that records what it sees.
func vaultOutside(t testing.TB) (port int, roots *x509.CertPool, rec *recorder) {
	t.Helper()
	upCA, err := NewCA("test upstream CA")
	if err != nil {
		t.Fatal(err)
	}
	rec = &recorder{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.add(seenReq{host: r.Host, header: r.Header.Clone(), body: string(b)})
		fmt.Fprintf(w, "ok %s %s body=%d", r.Host, r.URL.Path, len(b))
	}))
	srv.TLS = &tls.Config{GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
		name := h.ServerName
		if name == "" {
			name = "127.0.0.1"
		}
		return upCA.Leaf(name)
	}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots = x509.NewCertPool()
	roots.AddCert(upCA.Certificate())
	return srv.Listener.Addr().(*net.TCPAddr).Port, roots, rec
}

type vaultEnv struct {
	tp       *testProxy
	ca       *CA
	rec      *recorder
	api, git Secret
	port     int
	plain    int // a plain-HTTP server's port
	plainRec *recorder
}

// startVault starts an outside server for api.example.com (secret "api",
// x-api-key header), git.example.com (secret "git", basic auth) and
// open.example.com (no secret: a plain tunnel), and a plain-HTTP server at
// plain.example.com, all behind a proxy with the vault.
func startVault(t testing.TB) *vaultEnv {
	t.Helper()
	port, roots, rec := vaultOutside(t)
	plainRec := &recorder{}
	ps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainRec.add(seenReq{host: r.Host, header: r.Header.Clone()})
		io.WriteString(w, "plain ok")
	}))
	t.Cleanup(ps.Close)
	plainPort := ps.Listener.Addr().(*net.TCPAddr).Port
	p := strconv.Itoa(port)
	pin := "127.0.0.1:" + p
	pol := &Policy{
		Rules: mustRules(t, "api.example.com", "git.example.com", "open.example.com", "plain.example.com:"+strconv.Itoa(plainPort)),
		Resolve: map[string]string{"api.example.com": pin, "git.example.com": pin, "open.example.com": pin,
			"plain.example.com": "127.0.0.1"},
	}
	api := Secret{Name: "api", Hosts: mustRules(t, "api.example.com"), Header: "x-api-key: {}", Value: apiValue}
	git := Secret{Name: "git", Hosts: mustRules(t, "git.example.com"), BasicAuthUser: "x-access-token", Value: gitValue}
	var err error
	for _, s := range []*Secret{&api, &git} {
		if s.Placeholder, err = NewPlaceholder(s.Name); err != nil {
			t.Fatal(err)
		}
	}
	ca, err := NewCA("podbot sandbox test", append(api.Hosts, git.Hosts...)...)
	if err != nil {
		t.Fatal(err)
	}
	tp := startProxy(t, pol, Options{UpstreamRoots: roots, Secrets: []Secret{api, git}, CA: ca})
	return &vaultEnv{tp: tp, ca: ca, rec: rec, api: api, git: git, port: port, plain: plainPort, plainRec: plainRec}
}

// client trusts the sandbox CA and the outside server's CA (for tunnels).
func (v *vaultEnv) client(t testing.TB, upstreamRoots *x509.CertPool) *http.Client {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(v.ca.Certificate())
	if upstreamRoots != nil {
		roots = upstreamRoots.Clone()
		roots.AddCert(v.ca.Certificate())
	}
	return v.tp.client(roots)
}

func do(t *testing.T, c *http.Client, method, u string, hdr map[string]string, basic [2]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if basic[0] != "" {
		req.SetBasicAuth(basic[0], basic[1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// noLeak fails if a secret's value is in the decision log.
func (v *vaultEnv) noLeak(t *testing.T) {
	t.Helper()
	l := v.tp.log.b.String()
	if strings.Contains(l, apiValue) || strings.Contains(l, gitValue) {
		t.Fatalf("a secret value is in the decision log:\n%s", l)
	}
}

func TestVaultInjectsOnItsHostsOnly(t *testing.T) {
	v := startVault(t)
	c := v.client(t, nil)
	code, body := do(t, c, "GET", "https://api.example.com/v1/messages", map[string]string{"X-Api-Key": v.api.Placeholder}, [2]string{})
	if code != 200 || body != "ok api.example.com /v1/messages body=0" {
		t.Fatalf("api: %d %q", code, body)
	}
	code, body = do(t, c, "GET", "https://git.example.com/o/r.git/info/refs", nil, [2]string{"x-access-token", v.git.Placeholder})
	if code != 200 {
		t.Fatalf("git: %d %q", code, body)
	}
	seen := v.rec.all()
	if len(seen) != 2 {
		t.Fatalf("outside saw %d requests", len(seen))
	}
	if got := seen[0].header.Get("X-Api-Key"); got != apiValue {
		t.Fatalf("api.example.com saw x-api-key %q", got)
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+gitValue))
	if got := seen[1].header.Get("Authorization"); got != want {
		t.Fatalf("git.example.com saw Authorization %q", got)
	}
	if strings.Contains(seen[0].header.Get("Authorization")+seen[1].header.Get("X-Api-Key"), "REAL") {
		t.Fatal("a value went into another header")
	}
	e := v.tp.log.waitEntry(t, func(e LogEntry) bool { return e.Host == "api.example.com" && e.Method == "GET" })
	if e.Decision != DecisionAllow || !strings.Contains(e.Reason, "injected secret api") || e.BytesDown == 0 {
		t.Fatalf("log entry %+v", e)
	}
	v.noLeak(t)
}

// The attacker sends a placeholder to every place it does not belong.
func TestVaultPlaceholderElsewhereRefused(t *testing.T) {
	v := startVault(t)
	c := v.client(t, nil)
	// To the other secret's host, in its own header, in the other
	// secret's form, and in an unrelated header.
	for _, tc := range []struct {
		name  string
		hdr   map[string]string
		basic [2]string
	}{
		{name: "header", hdr: map[string]string{"X-Api-Key": v.api.Placeholder}},
		{name: "basic", basic: [2]string{"x-access-token", v.api.Placeholder}},
		{name: "other header", hdr: map[string]string{"X-Echo": "token=" + v.api.Placeholder}},
	} {
		code, body := do(t, c, "GET", "https://git.example.com/leak", tc.hdr, tc.basic)
		if code != 403 || !strings.Contains(body, "secret api") {
			t.Fatalf("%s: api's placeholder to git.example.com: %d %q", tc.name, code, body)
		}
	}
	// The git placeholder to the api host.
	code, _ := do(t, c, "GET", "https://api.example.com/leak", map[string]string{"X-Api-Key": v.git.Placeholder}, [2]string{})
	if code != 403 {
		t.Fatalf("git's placeholder to api.example.com: %d", code)
	}
	// Plain HTTP forwarding: in a header, and in the URL.
	pu := "http://plain.example.com:" + strconv.Itoa(v.plain)
	code, _ = do(t, c, "GET", pu+"/leak", map[string]string{"Authorization": "Bearer " + v.api.Placeholder}, [2]string{})
	if code != 403 {
		t.Fatalf("plain HTTP with a placeholder: %d", code)
	}
	code, _ = do(t, c, "GET", pu+"/leak?k="+url.QueryEscape(v.git.Placeholder), nil, [2]string{})
	if code != 403 {
		t.Fatalf("plain HTTP with a placeholder in the URL: %d", code)
	}
	// In the CONNECT request to a tunnel host.
	conn, err := net.Dial("tcp", v.tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT open.example.com:443 HTTP/1.1\r\nHost: open.example.com:443\r\nX-Key: %s\r\n\r\n", v.api.Placeholder)
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 403 {
		t.Fatalf("CONNECT carrying a placeholder: %v %v", resp, err)
	}
	if n := len(v.rec.all()) + len(v.plainRec.all()); n != 0 {
		t.Fatalf("outside servers saw %d refused requests", n)
	}
	denies := 0
	for _, e := range v.tp.log.entries(t) {
		if e.Decision == DecisionDeny && strings.Contains(e.Reason, "placeholder of secret") {
			denies++
		}
	}
	if denies != 7 {
		t.Fatalf("want 7 deny entries naming the secret, got %d:\n%s", denies, v.tp.log.b.String())
	}
	v.noLeak(t)

	// Inside a tunnel to a host no secret belongs to the proxy sees
	// nothing: the placeholder arrives as it is, useless.
	_, roots, _ := vaultOutsideRoots(t, v)
	code, _ = do(t, v.client(t, roots), "GET", "https://open.example.com/x", map[string]string{"X-Api-Key": v.api.Placeholder}, [2]string{})
	if code != 200 {
		t.Fatalf("tunnel: %d", code)
	}
	if d := v.rec.dump(); strings.Contains(d, apiValue) || !strings.Contains(d, v.api.Placeholder) {
		t.Fatalf("the tunnel host saw:\n%s", d)
	}
}

// vaultOutsideRoots returns the outside server's roots, as the proxy has
// them, for a client that tunnels to it.
func vaultOutsideRoots(t *testing.T, v *vaultEnv) (int, *x509.CertPool, *recorder) {
	t.Helper()
	return v.port, v.tp.o.UpstreamRoots, v.rec
}

// forgeLeaf signs a leaf for host with the CA's key, skipping Leaf's own
// check, as a thief of the key would.
func forgeLeaf(ca *CA, host string) (*x509.Certificate, error) {
	serial, _ := randSerial()
	tmpl := &x509.Certificate{SerialNumber: serial, DNSNames: []string{host}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &ca.leafKey.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(der)
}

func TestVaultClientMustTrustCA(t *testing.T) {
	v := startVault(t)
	req, _ := http.NewRequest("GET", "https://api.example.com/", nil)
	req.Header.Set("X-Api-Key", v.api.Placeholder)
	if _, err := v.tp.client(x509.NewCertPool()).Do(req); err == nil {
		t.Fatal("a client that does not trust the sandbox CA accepted the intercepted connection")
	}
	if len(v.rec.all()) != 0 {
		t.Fatal("the request went out")
	}
	// HTTP/2 is not offered, only http/1.1.
	resp, c, br := rawConnect(t, v.tp.addr, "api.example.com:443")
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	roots := x509.NewCertPool()
	roots.AddCert(v.ca.Certificate())
	tc := tls.Client(&bufConn{Conn: c, r: br}, &tls.Config{ServerName: "api.example.com", RootCAs: roots, NextProtos: []string{"h2", "http/1.1"}})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	if p := tc.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
		t.Fatalf("ALPN %q", p)
	}
	// The SNI must be the CONNECT host here too.
	resp, c, br = rawConnect(t, v.tp.addr, "api.example.com:443")
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	tc = tls.Client(&bufConn{Conn: c, r: br}, &tls.Config{ServerName: "git.example.com", RootCAs: roots})
	if err := tc.Handshake(); err == nil {
		t.Fatal("a mismatched SNI was intercepted")
	}
	v.tp.log.waitEntry(t, func(e LogEntry) bool {
		return e.Decision == DecisionDeny && strings.Contains(e.Reason, "does not match the CONNECT host")
	})
}

func TestVaultUpstreamVerified(t *testing.T) {
	v := startVault(t)
	// A proxy that does not trust the outside server's CA refuses to send
	// the secret there.
	p2 := startProxy(t, v.tp.Policy(), Options{Secrets: []Secret{v.api}, CA: v.ca, UpstreamRoots: x509.NewCertPool()})
	roots := x509.NewCertPool()
	roots.AddCert(v.ca.Certificate())
	req, _ := http.NewRequest("GET", "https://api.example.com/", nil)
	req.Header.Set("X-Api-Key", v.api.Placeholder)
	resp, err := p2.client(roots).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 502 || len(v.rec.all()) != 0 {
		t.Fatalf("unverified upstream: %d, %d requests seen", resp.StatusCode, len(v.rec.all()))
	}
	if l := p2.log.b.String(); strings.Contains(l, apiValue) || !strings.Contains(l, "upstream TLS") {
		t.Fatalf("log:\n%s", l)
	}
}

func TestCALeafOnlyForItsHost(t *testing.T) {
	ca, err := NewCA("t", mustRules(t, "api.example.com", "*.github.test")...)
	if err != nil {
		t.Fatal(err)
	}
	if ca.Certificate().NotAfter.After(time.Now().Add(CALifetime + time.Minute)) {
		t.Fatal("CA lives too long")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	leaf, err := ca.Leaf("api.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := ca.Leaf("api.example.com"); again != leaf {
		t.Fatal("leaf not cached")
	}
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: "api.example.com", Roots: roots}); err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: "other.example.com", Roots: roots}); err == nil {
		t.Fatal("leaf valid for another host")
	}
	if _, err := ca.Leaf("x.github.test"); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"evil.test", "example.com", "127.0.0.1"} {
		if _, err := ca.Leaf(h); err == nil {
			t.Fatalf("constrained CA issued for %s", h)
		}
	}
	// Even a leaf the key signs outside the constraints (a stolen key) is
	// refused by a verifying client.
	fl, err := forgeLeaf(ca, "evil.test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fl.Verify(x509.VerifyOptions{DNSName: "evil.test", Roots: roots}); err == nil {
		t.Fatal("name constraints not enforced")
	}

	// The key round-trips; the sandbox gets only CertPEM.
	kp, err := ca.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseCA(ca.CertPEM(), kp)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Certificate().Equal(ca.Certificate()) {
		t.Fatal("ParseCA changed the certificate")
	}
	other, _ := NewCA("other")
	okp, _ := other.KeyPEM()
	if _, err := ParseCA(ca.CertPEM(), okp); !errors.Is(err, ErrBadCA) {
		t.Fatalf("mismatched key: %v", err)
	}
	if _, err := ParseCA(kp, kp); !errors.Is(err, ErrBadCA) {
		t.Fatalf("key as cert: %v", err)
	}
}

func TestVaultSetSecretsNextRequest(t *testing.T) {
	v := startVault(t)
	c := v.client(t, nil)
	hdr := map[string]string{"X-Api-Key": v.api.Placeholder}
	if code, _ := do(t, c, "GET", "https://api.example.com/1", hdr, [2]string{}); code != 200 {
		t.Fatal(code)
	}
	nv := v.api
	nv.Value = "sk-ant-ROTATED"
	if err := v.tp.SetSecrets([]Secret{nv, v.git}); err != nil {
		t.Fatal(err)
	}
	if code, _ := do(t, c, "GET", "https://api.example.com/2", hdr, [2]string{}); code != 200 { // same kept-alive connection
		t.Fatal(code)
	}
	seen := v.rec.all()
	if seen[0].header.Get("X-Api-Key") != apiValue || seen[1].header.Get("X-Api-Key") != "sk-ant-ROTATED" {
		t.Fatalf("saw %q then %q", seen[0].header.Get("X-Api-Key"), seen[1].header.Get("X-Api-Key"))
	}
	bad := v.api
	bad.Value = "a\r\nX-Evil: 1"
	if err := v.tp.SetSecrets([]Secret{bad}); err == nil || strings.Contains(err.Error(), "X-Evil") {
		t.Fatalf("a value with CRLF: %v", err)
	}
}

// A request body streams through the intercepted connection.
func TestVaultBodyStreams(t *testing.T) {
	v := startVault(t)
	c := v.client(t, nil)
	body := strings.Repeat("x", 3<<20)
	req, _ := http.NewRequest("POST", "https://git.example.com/o/r.git/git-receive-pack", strings.NewReader(body))
	req.SetBasicAuth("x-access-token", v.git.Placeholder)
	req.Header.Set("Expect", "100-continue")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasSuffix(string(b), "body="+strconv.Itoa(len(body))) {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
}

func TestSecretsFile(t *testing.T) {
	v := startVault(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "secrets.json")
	if err := WriteSecretsFile(path, []Secret{v.api, v.git}); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	got, err := ReadSecretsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Value != apiValue || got[1].BasicAuthUser != "x-access-token" || got[0].Hosts[0].Host != "api.example.com" {
		t.Fatalf("round trip: %+v", got)
	}
	// The value is not marshalled with a Secret, nor printed.
	j, _ := json.Marshal(v.api)
	if s := string(j) + fmt.Sprint(v.api) + fmt.Sprintf("%+v %#v", v.api, v.api); strings.Contains(s, apiValue) {
		t.Fatalf("the value shows: %s", s)
	}
	// Nor in a policy file.
	pp := filepath.Join(dir, "policy.json")
	if err := WritePolicyFile(pp, v.tp.Policy()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(pp); strings.Contains(string(b), apiValue) {
		t.Fatal("value in the policy file")
	}

	good, _ := os.ReadFile(path)
	write := func(name string, data []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		json.Unmarshal(good, &m)
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	first := func(m map[string]any) map[string]any { return m["secrets"].([]any)[0].(map[string]any) }
	link := filepath.Join(dir, "link.json")
	os.Symlink(path, link)
	hostile := map[string]string{
		"world-readable": write("open.json", good, 0o644),
		"symlink":        link,
		"directory":      dir,
		"oversized":      write("big.json", append(good, make([]byte, MaxSecretsFileBytes)...), 0o600),
		"trailing":       write("trail.json", append(append([]byte{}, good...), []byte("{}")...), 0o600),
		"unknown field":  write("unk.json", edit(func(m map[string]any) { first(m)["extra"] = 1 }), 0o600),
		"version":        write("ver.json", edit(func(m map[string]any) { m["version"] = 2 }), 0o600),
		"bad placeholder": write("ph.json", edit(func(m map[string]any) {
			first(m)["placeholder"] = v.git.Placeholder
		}), 0o600),
		"crlf value":  write("crlf.json", edit(func(m map[string]any) { first(m)["value"] = apiValue + "\r\nX-A: b" }), 0o600),
		"no hosts":    write("nohost.json", edit(func(m map[string]any) { first(m)["hosts"] = []any{} }), 0o600),
		"bad host":    write("badhost.json", edit(func(m map[string]any) { first(m)["hosts"] = []any{map[string]any{"host": "*.*"}} }), 0o600),
		"bad header":  write("hdr.json", edit(func(m map[string]any) { first(m)["header"] = "Host: {}" }), 0o600),
		"two {}":      write("hdr2.json", edit(func(m map[string]any) { first(m)["header"] = "X-A: {}{}" }), 0o600),
		"both":        write("both.json", edit(func(m map[string]any) { first(m)["basic_auth_user"] = "u" }), 0o600),
		"duplicate":   write("dup.json", edit(func(m map[string]any) { s := m["secrets"].([]any); m["secrets"] = append(s, s[0]) }), 0o600),
		"value array": write("arr.json", edit(func(m map[string]any) { first(m)["value"] = []any{apiValue} }), 0o600),
		"not JSON":    write("nj.json", []byte(`{"version":1,"secrets":[{"value":"`+apiValue+`"`), 0o600),
	}
	for name, p := range hostile {
		_, err := ReadSecretsFile(p)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), apiValue) || strings.Contains(err.Error(), gitValue) {
			t.Errorf("%s: the error holds a value: %v", name, err)
		}
	}
}

func TestValidateSecretErrors(t *testing.T) {
	ph, _ := NewPlaceholder("k")
	if !strings.HasPrefix(ph, "podbot-secret-k-") || len(ph) != len("podbot-secret-k-")+24 {
		t.Fatalf("placeholder %q", ph)
	}
	if ph2, _ := NewPlaceholder("k"); ph2 == ph {
		t.Fatal("placeholders repeat")
	}
	if _, err := NewPlaceholder("Bad Name"); err == nil {
		t.Fatal("bad name accepted")
	}
	ok := Secret{Name: "k", Hosts: mustRules(t, "h.example"), Header: "Authorization: Bearer {}", Placeholder: ph, Value: "v"}
	if err := ValidateSecret(ok); err != nil {
		t.Fatal(err)
	}
	for field, mut := range map[string]func(s *Secret){
		"name":            func(s *Secret) { s.Name = "K" },
		"hosts":           func(s *Secret) { s.Hosts = nil },
		"header":          func(s *Secret) { s.Header = "Bearer {}" },
		"basic_auth_user": func(s *Secret) { s.Header = ""; s.BasicAuthUser = "a:b" },
		"placeholder":     func(s *Secret) { s.Placeholder = "podbot-secret-k-short" },
		"value":           func(s *Secret) { s.Value = "" },
	} {
		s := ok
		mut(&s)
		var se *SecretError
		if err := ValidateSecret(s); !errors.As(err, &se) || se.Field != field || !errors.Is(err, ErrBadSecret) {
			t.Errorf("%s: %v", field, err)
		}
	}
	for _, h := range []string{"Authorization: Bearer {}", "x-api-key: {}", "X-Token: t={};"} {
		if _, err := ParseHeaderTemplate(h); err != nil {
			t.Errorf("%q: %v", h, err)
		}
	}
	for _, h := range []string{"", "{}", "x-api-key: ", "x api: {}", "Content-Length: {}", "Proxy-Authorization: {}", "A: {}\x01x", "A: {} {}"} {
		if _, err := ParseHeaderTemplate(h); err == nil {
			t.Errorf("%q accepted", h)
		}
	}
	if _, err := New(Options{Secrets: []Secret{ok}}); err == nil {
		t.Fatal("secrets without a CA accepted")
	}
}

// FuzzInject: whatever the client sends, a value is only ever put into a
// request to its own host, and only in its header or Basic credential.
func FuzzInject(f *testing.F) {
	api := Secret{Name: "api", Header: "Authorization: Bearer {}", Value: apiValue,
		Placeholder: "podbot-secret-api-AAAAAAAAAAAAAAAAAAAAAAAA"}
	git := Secret{Name: "git", BasicAuthUser: "x-access-token", Value: gitValue,
		Placeholder: "podbot-secret-git-BBBBBBBBBBBBBBBBBBBBBBBB"}
	basic := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	f.Add("Authorization", "Bearer "+api.Placeholder, "api.example.com")
	f.Add("Authorization", basic("x-access-token", git.Placeholder), "git.example.com")
	f.Add("Authorization", basic("x-access-token", git.Placeholder), "api.example.com")
	f.Add("Authorization", "Bearer "+api.Placeholder, "git.example.com")
	f.Add("X-Other", api.Placeholder, "api.example.com")
	f.Add("Authorization", "basic "+base64.StdEncoding.EncodeToString([]byte("x-access-token:"+git.Placeholder)), "git.example.com")
	f.Add("Authorization", "Bearer  "+api.Placeholder, "api.example.com")
	f.Fuzz(func(t *testing.T, name, value, host string) {
		api.Hosts = []Rule{{Host: "api.example.com"}}
		git.Hosts = []Rule{{Host: "git.example.com"}}
		ss := []Secret{api, git}
		h, ok := NormalizeHost(host)
		if !ok {
			return
		}
		hdr := http.Header{}
		hdr[http.CanonicalHeaderKey(name)] = []string{value}
		m := findMisuse(ss, h, 443, hdr, "")
		injected := inject(ss, h, 443, hdr)
		for _, s := range ss {
			if strings.Contains(value, s.Value) {
				return // the client already knew it
			}
		}
		out := fmt.Sprint(hdr)
		for _, k := range hdr {
			for _, v := range k {
				out += decodeBasic(v)
			}
		}
		for _, s := range ss {
			if strings.Contains(out, s.Value) {
				if !s.belongs(h, 443) {
					t.Fatalf("%s's value went to %s", s.Name, h)
				}
				if m != nil {
					t.Fatalf("injected although refused: %v", m)
				}
				if len(injected) == 0 {
					t.Fatal("value present but not reported as injected")
				}
			}
		}
		if (strings.Contains(value, api.Placeholder) || strings.Contains(decodeBasic(value), api.Placeholder)) && h != "api.example.com" && m == nil {
			t.Fatalf("api's placeholder to %s not refused", h)
		}
	})
}

// Inside an intercepted connection the request's Host and absolute-form
// target cannot redirect it, upgrades are refused, oversized headers get
// 431, and a policy change applies to the next request on a kept-alive
// connection.
func TestVaultInterceptedRequestShape(t *testing.T) {
	v := startVault(t)
	roots := x509.NewCertPool()
	roots.AddCert(v.ca.Certificate())
	open := func() (*tls.Conn, *bufio.Reader) {
		resp, c, br := rawConnect(t, v.tp.addr, "api.example.com:443")
		if resp.StatusCode != 200 {
			t.Fatal(resp.Status)
		}
		tc := tls.Client(&bufConn{Conn: c, r: br}, &tls.Config{ServerName: "api.example.com", RootCAs: roots})
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		return tc, bufio.NewReader(tc)
	}
	send := func(tc *tls.Conn, br *bufio.Reader, raw string) *http.Response {
		t.Helper()
		io.WriteString(tc, raw)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	tc, br := open()
	resp := send(tc, br, "GET http://git.example.com/abs HTTP/1.1\r\nHost: git.example.com\r\nX-Api-Key: "+v.api.Placeholder+"\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	seen := v.rec.all()
	if seen[0].host != "api.example.com" || seen[0].header.Get("X-Api-Key") != apiValue {
		t.Fatalf("outside saw host %q", seen[0].host)
	}
	// Live deny on the same connection.
	pol := v.tp.Policy().Clone()
	pol.Deny = mustRules(t, "api.example.com")
	v.tp.SetPolicy(pol)
	if resp := send(tc, br, "GET /again HTTP/1.1\r\nHost: api.example.com\r\n\r\n"); resp.StatusCode != 403 {
		t.Fatalf("after a live deny: %s", resp.Status)
	}
	pol.Deny = nil
	v.tp.SetPolicy(pol)
	tc, br = open()
	if resp := send(tc, br, "GET /ws HTTP/1.1\r\nHost: api.example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"); resp.StatusCode != 501 {
		t.Fatalf("upgrade: %s", resp.Status)
	}
	tc, br = open()
	if resp := send(tc, br, "GET / HTTP/1.1\r\nHost: api.example.com\r\nX-Big: "+strings.Repeat("a", maxHeaderBytes+8192)+"\r\n\r\n"); resp.StatusCode != 431 {
		t.Fatalf("big headers: %s", resp.Status)
	}
	if n := len(v.rec.all()); n != 1 {
		t.Fatalf("outside saw %d requests, want 1", n)
	}
}
