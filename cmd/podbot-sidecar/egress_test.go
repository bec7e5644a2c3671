package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
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

	"github.com/podbot/podbot/egress"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestParseEgress(t *testing.T) {
	var errOut bytes.Buffer
	opts, err := parseEgress([]string{"--listen", ":3128", "--policy", "/p.json", "--log", "/l.jsonl", "--upstream-ca", "/ca.pem"}, &errOut)
	if err != nil || opts.listen != ":3128" || opts.policy != "/p.json" || opts.log != "/l.jsonl" || opts.upstreamCA != "/ca.pem" {
		t.Fatalf("parseEgress = %+v, %v", opts, err)
	}
	for _, args := range [][]string{
		{"--policy", "p", "--log", "l"},
		{"--listen", ":1", "--log", "l"},
		{"--listen", ":1", "--policy", "p"},
		{"--listen", ":1", "--policy", "p", "--log", "l", "extra"},
	} {
		if _, err := parseEgress(args, &errOut); err == nil {
			t.Errorf("parseEgress(%q) accepted", args)
		}
	}
	var out, eOut bytes.Buffer
	if code := run(context.Background(), []string{"egress", "--listen", ":1"}, &out, &eOut); code != 2 || !strings.Contains(eOut.String(), "egress needs --policy") {
		t.Fatalf("run egress without --policy: %d %q", code, eOut.String())
	}
	eOut.Reset()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"version":1,"rules":[{"host":"*"}]}`), 0o644)
	if code := run(context.Background(), []string{"egress", "--listen", "127.0.0.1:0", "--policy", filepath.Join(dir, "bad.json"), "--log", filepath.Join(dir, "l")}, &out, &eOut); code != 1 || !strings.Contains(eOut.String(), "bad egress policy file") {
		t.Fatalf("run egress with a bad policy: %d %q", code, eOut.String())
	}
}

// The runner serves, reloads a changed policy file without a restart,
// keeps the policy in force when the file goes bad, and stops on cancel.
func TestRunEgressReloads(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "outside") }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	policyPath, logPath := filepath.Join(dir, "policy.json"), filepath.Join(dir, "egress.jsonl")
	pol := &egress.Policy{Resolve: map[string]string{"plain.test": "127.0.0.1"}}
	if err := egress.WritePolicyFile(policyPath, pol); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan net.Addr, 1)
	stderr := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- runEgress(ctx, egressOptions{listen: "127.0.0.1:0", policy: policyPath, log: logPath, ready: func(a net.Addr) { addrc <- a }}, stderr)
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("runEgress: %v (%s)", err, stderr.String())
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr.String()}), DisableKeepAlives: true}}
	target := fmt.Sprintf("http://plain.test:%d/", port)
	status := func() int {
		resp, err := c.Get(target)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitStatus := func(want int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for status() != want {
			if time.Now().After(deadline) {
				t.Fatalf("status never became %d; stderr:\n%s", want, stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if got := status(); got != 403 {
		t.Fatalf("before the allow: %d", got)
	}
	r, _ := egress.ParseRule("plain.test:" + strconv.Itoa(port))
	pol.Rules = []egress.Rule{r}
	if err := egress.WritePolicyFile(policyPath, pol); err != nil {
		t.Fatal(err)
	}
	waitStatus(200)
	if !strings.Contains(stderr.String(), "egress policy reloaded") {
		t.Fatalf("no reload line: %s", stderr.String())
	}
	// A broken file keeps the policy in force.
	if err := os.WriteFile(policyPath, []byte(`{"version":1,"rules":[{"host":"*"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(stderr.String(), "egress policy not reloaded") {
		if time.Now().After(deadline) {
			t.Fatalf("no error line: %s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := status(); got != 200 {
		t.Fatalf("after a bad file: %d", got)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("runEgress after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("runEgress did not stop")
	}
	logData, _ := os.ReadFile(logPath)
	var allows, denies int
	egress.ReadLog(bytes.NewReader(logData), func(e egress.LogEntry) error {
		if e.Decision == egress.DecisionAllow {
			allows++
		} else {
			denies++
		}
		return nil
	})
	if allows < 2 || denies < 1 {
		t.Fatalf("log has %d allows, %d denies:\n%s", allows, denies, logData)
	}
}

func TestParseEgressVaultFlags(t *testing.T) {
	var errOut bytes.Buffer
	base := []string{"--listen", ":1", "--policy", "p", "--log", "l"}
	opts, err := parseEgress(append(base, "--secrets", "/s", "--ca-cert", "/c", "--ca-key", "/k"), &errOut)
	if err != nil || opts.secrets != "/s" || opts.caCert != "/c" || opts.caKey != "/k" {
		t.Fatalf("%+v %v", opts, err)
	}
	for _, extra := range [][]string{{"--secrets", "/s"}, {"--ca-cert", "/c", "--ca-key", "/k"}, {"--secrets", "/s", "--ca-key", "/k"}} {
		if _, err := parseEgress(append(append([]string{}, base...), extra...), &errOut); err == nil {
			t.Errorf("%q accepted", extra)
		}
	}
}

// With --secrets, the runner intercepts the secret's host, injects the
// value, picks up a changed value without a restart, and never prints a
// value.
func TestRunEgressVault(t *testing.T) {
	seen := make(chan string, 10)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Get("Authorization")
		io.WriteString(w, "outside")
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	policyPath, logPath := filepath.Join(dir, "policy.json"), filepath.Join(dir, "egress.jsonl")
	upstreamCA := filepath.Join(dir, "upstream.pem")
	os.WriteFile(upstreamCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
	rule, _ := egress.ParseRule("example.com")
	pol := &egress.Policy{Rules: []egress.Rule{rule}, Resolve: map[string]string{"example.com": "127.0.0.1:" + strconv.Itoa(port)}}
	if err := egress.WritePolicyFile(policyPath, pol); err != nil {
		t.Fatal(err)
	}
	ph, _ := egress.NewPlaceholder("api")
	sec := egress.Secret{Name: "api", Hosts: []egress.Rule{rule}, Header: "Authorization: Bearer {}", Placeholder: ph, Value: "sk-FIRST-value"}
	secretsPath := filepath.Join(dir, "secrets.json")
	if err := egress.WriteSecretsFile(secretsPath, []egress.Secret{sec}); err != nil {
		t.Fatal(err)
	}
	ca, err := egress.NewCA("test sandbox", rule)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca.key")
	kp, _ := ca.KeyPEM()
	os.WriteFile(certPath, ca.CertPEM(), 0o644)
	os.WriteFile(keyPath, kp, 0o644)
	var stderr lockedBuffer
	opts := egressOptions{listen: "127.0.0.1:0", policy: policyPath, log: logPath, upstreamCA: upstreamCA,
		secrets: secretsPath, caCert: certPath, caKey: keyPath}
	if err := runEgress(context.Background(), opts, &stderr); err == nil || !strings.Contains(err.Error(), "0600") {
		t.Fatalf("a readable CA key: %v", err)
	}
	os.Chmod(keyPath, 0o600)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	opts.ready = func(a net.Addr) { addrc <- a }
	go func() { done <- runEgress(ctx, opts, &stderr) }()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("runEgress: %v (%s)", err, stderr.String())
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr.String()}),
		TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}}
	get := func() string {
		t.Helper()
		req, _ := http.NewRequest("GET", "https://example.com/", nil)
		req.Header.Set("Authorization", "Bearer "+ph)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return <-seen
	}
	if got := get(); got != "Bearer sk-FIRST-value" {
		t.Fatalf("outside saw %q", got)
	}
	sec.Value = "sk-SECOND-value"
	if err := egress.WriteSecretsFile(secretsPath, []egress.Secret{sec}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(stderr.String(), "egress secrets reloaded") {
		if time.Now().After(deadline) {
			t.Fatalf("no reload: %s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := get(); got != "Bearer sk-SECOND-value" {
		t.Fatalf("after the reload the outside saw %q", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	logData, _ := os.ReadFile(logPath)
	if out := stderr.String() + string(logData); strings.Contains(out, "sk-FIRST") || strings.Contains(out, "sk-SECOND") {
		t.Fatalf("a value was printed or logged:\n%s", out)
	}
}
