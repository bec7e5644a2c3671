package egress

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchOutside is a local TLS server standing for a host on the internet:
// "/" answers a few bytes, "/big" 256 MiB.
func benchOutside(b *testing.B) (*httptest.Server, *x509.CertPool, int) {
	b.Helper()
	chunk := make([]byte, 1<<20)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/big" {
			io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(256*len(chunk)))
		for i := 0; i < 256; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	b.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return srv, roots, srv.Listener.Addr().(*net.TCPAddr).Port
}

// benchClients returns a client straight to the server and one through a
// proxy that allows example.com pinned to the server, with their URLs.
func benchClients(b *testing.B, keepAlive bool) (direct, proxied *http.Client, directURL, proxiedURL string) {
	b.Helper()
	srv, roots, port := benchOutside(b)
	pol := &Policy{Rules: mustRules(b, "example.com"), Resolve: map[string]string{"example.com": "127.0.0.1:" + strconv.Itoa(port)}}
	tp := startProxy(b, pol, Options{Log: io.Discard})
	mk := func(proxy func(*http.Request) (*url.URL, error)) *http.Client {
		return &http.Client{Transport: &http.Transport{
			Proxy:             proxy,
			TLSClientConfig:   &tls.Config{RootCAs: roots},
			DisableKeepAlives: !keepAlive,
			ForceAttemptHTTP2: false,
		}}
	}
	return mk(nil), mk(http.ProxyURL(&url.URL{Scheme: "http", Host: tp.addr})), srv.URL, "https://example.com"
}

func fetch(c *http.Client, u string) func() error {
	return func() error {
		resp, err := c.Get(u)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != 200 {
			err = fmt.Errorf("%s: %s", u, resp.Status)
		}
		return err
	}
}

// benchPair times direct and proxied calls in turn, one each per
// iteration, and reports both p50s, the proxy's added p50 and the ratio.
func benchPair(b *testing.B, direct, proxied func() error) (dp50, pp50 time.Duration) {
	b.Helper()
	if err := direct(); err != nil { // warm up both
		b.Fatal(err)
	}
	if err := proxied(); err != nil {
		b.Fatal(err)
	}
	var ds, ps []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if err := direct(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
		start = time.Now()
		if err := proxied(); err != nil {
			b.Fatal(err)
		}
		ps = append(ps, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(ds)
	slices.Sort(ps)
	return ds[len(ds)/2], ps[len(ps)/2]
}

// BenchmarkHTTPSLatency: one small HTTPS request on a kept-alive
// connection, direct vs through the proxy's tunnel (target: p50 added
// ≤ 1 ms).
func BenchmarkHTTPSLatency(b *testing.B) {
	direct, proxied, du, pu := benchClients(b, true)
	d, p := benchPair(b, fetch(direct, du+"/"), fetch(proxied, pu+"/"))
	reportLatency(b, d, p)
}

// BenchmarkHTTPSLatencyNewConn: the same with a new connection per
// request, so the proxy's CONNECT, policy check, dial and ClientHello read
// are in every request.
func BenchmarkHTTPSLatencyNewConn(b *testing.B) {
	direct, proxied, du, pu := benchClients(b, false)
	d, p := benchPair(b, fetch(direct, du+"/"), fetch(proxied, pu+"/"))
	reportLatency(b, d, p)
}

func reportLatency(b *testing.B, d, p time.Duration) {
	b.ReportMetric(float64(d.Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(p.Microseconds()), "proxy-p50-µs")
	b.ReportMetric(float64((p - d).Microseconds()), "added-p50-µs")
	b.ReportMetric(float64(p)/float64(d), "proxy/direct-p50")
}

// BenchmarkDownload256MiB: a 256 MiB HTTPS download direct vs through the
// proxy (target: proxy ≥ 50% of direct throughput).
func BenchmarkDownload256MiB(b *testing.B) {
	direct, proxied, du, pu := benchClients(b, true)
	d, p := benchPair(b, fetch(direct, du+"/big"), fetch(proxied, pu+"/big"))
	const mib = 256.0
	b.ReportMetric(mib/d.Seconds(), "direct-MiB/s")
	b.ReportMetric(mib/p.Seconds(), "proxy-MiB/s")
	b.ReportMetric(d.Seconds()/p.Seconds(), "proxy/direct-throughput")
}

// BenchmarkIdleRSS builds podbot-sidecar, runs its egress proxy, sends one
// request through it and reports its resident memory once idle (target:
// ≤ 20 MiB). It needs the go command and Linux's /proc.
func BenchmarkIdleRSS(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command to build podbot-sidecar")
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "podbot-sidecar")
	build := exec.Command(goBin, "build", "-o", bin, "../cmd/podbot-sidecar")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	srv, roots, port := benchOutside(b)
	_ = srv
	policy := filepath.Join(dir, "policy.json")
	pol := &Policy{Rules: mustRules(b, "example.com"), Resolve: map[string]string{"example.com": "127.0.0.1:" + strconv.Itoa(port)}}
	if err := WritePolicyFile(policy, pol); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "egress", "--listen", "127.0.0.1:0", "--policy", policy, "--log", filepath.Join(dir, "log.jsonl"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	sc := bufio.NewScanner(stderr)
	addr := ""
	for addr == "" && sc.Scan() {
		if _, a, ok := strings.Cut(sc.Text(), " addr="); ok {
			addr, _, _ = strings.Cut(a, " ")
		}
	}
	go io.Copy(io.Discard, stderr)
	if addr == "" {
		b.Fatal("the proxy never said where it listens")
	}
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr}), TLSClientConfig: &tls.Config{RootCAs: roots}}}
	for b.Loop() {
		if err := fetch(c, "https://example.com/")(); err != nil {
			b.Fatal(err)
		}
	}
	c.CloseIdleConnections()
	time.Sleep(500 * time.Millisecond)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			b.ReportMetric(float64(kib)/1024, "idle-RSS-MiB")
		}
	}
}
