package egress

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
)

// vaultBenchClient returns a client through a vault proxy for which
// api.example.com is intercepted (secret "api") and open.example.com, the
// same local server, is a plain tunnel.
func vaultBenchClient(b *testing.B, keepAlive bool) (*http.Client, Secret) {
	b.Helper()
	port, roots, _ := vaultOutside(b)
	pin := "127.0.0.1:" + strconv.Itoa(port)
	pol := &Policy{Rules: mustRules(b, "api.example.com", "open.example.com"),
		Resolve: map[string]string{"api.example.com": pin, "open.example.com": pin}}
	ph, err := NewPlaceholder("api")
	if err != nil {
		b.Fatal(err)
	}
	api := Secret{Name: "api", Hosts: mustRules(b, "api.example.com"), Header: "Authorization: Bearer {}", Placeholder: ph, Value: apiValue}
	ca, err := NewCA("bench", api.Hosts...)
	if err != nil {
		b.Fatal(err)
	}
	tp := startProxy(b, pol, Options{Log: io.Discard, UpstreamRoots: roots, Secrets: []Secret{api}, CA: ca})
	all := roots.Clone()
	all.AddCert(ca.Certificate())
	return &http.Client{Transport: &http.Transport{
		Proxy:             http.ProxyURL(&url.URL{Scheme: "http", Host: tp.addr}),
		TLSClientConfig:   &tls.Config{RootCAs: all},
		DisableKeepAlives: !keepAlive,
	}}, api
}

func authFetch(c *http.Client, u, ph string) func() error {
	return func() error {
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Authorization", "Bearer "+ph)
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return err
	}
}

// BenchmarkVaultIntercepted: one small request on a kept-alive connection
// to the same local server, as a plain tunnel ("direct" metrics) vs
// intercepted with a secret injected ("proxy" metrics).
func BenchmarkVaultIntercepted(b *testing.B) {
	c, api := vaultBenchClient(b, true)
	d, p := benchPair(b, authFetch(c, "https://open.example.com/", api.Placeholder), authFetch(c, "https://api.example.com/", api.Placeholder))
	reportVault(b, d, p)
}

// BenchmarkVaultInterceptedNewConn: the same with a new connection per
// request (the interception's extra TLS handshakes each time).
func BenchmarkVaultInterceptedNewConn(b *testing.B) {
	c, api := vaultBenchClient(b, false)
	d, p := benchPair(b, authFetch(c, "https://open.example.com/", api.Placeholder), authFetch(c, "https://api.example.com/", api.Placeholder))
	reportVault(b, d, p)
}

func reportVault(b *testing.B, tunnel, intercepted interface{ Microseconds() int64 }) {
	b.ReportMetric(float64(tunnel.Microseconds()), "tunnel-p50-µs")
	b.ReportMetric(float64(intercepted.Microseconds()), "intercepted-p50-µs")
	b.ReportMetric(float64(intercepted.Microseconds())/float64(max(tunnel.Microseconds(), 1)), "intercepted/tunnel-p50")
}
