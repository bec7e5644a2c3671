//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// frontScript plays domain fronting from inside the sandbox: it opens a
// CONNECT to the proxy (from $HTTPS_PROXY) for argv[1], reads the proxy's
// answer byte by byte (so no TLS byte is swallowed), then starts TLS with
// server_name argv[2] and sends a GET whose Host is that same name. It
// prints "connect STATUS-LINE" and then "tls ok FIRST-LINE" or
// "tls refused ERROR".
const frontScript = `
import os, socket, ssl, sys, urllib.parse
target, sni = sys.argv[1], sys.argv[2]
p = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
s = socket.create_connection((p.hostname, p.port), timeout=10)
s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
head = b""
while not head.endswith(b"\r\n\r\n") and len(head) < 8192:
    b = s.recv(1)
    if not b:
        break
    head += b
print("connect", head.split(b"\r\n")[0].decode(errors="replace"))
ctx = ssl._create_unverified_context()
try:
    t = ctx.wrap_socket(s, server_hostname=sni)
    t.sendall(("GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % sni).encode())
    data = b""
    while True:
        b = t.recv(4096)
        if not b:
            break
        data += b
    print("tls ok", data.split(b"\r\n")[0].decode(errors="replace"), data.split(b"\r\n\r\n", 1)[-1].decode(errors="replace").strip())
except Exception as e:
    print("tls refused", type(e).__name__, e)
`

// recordingTLS is an outside HTTPS server that records the server name of
// every TLS ClientHello it receives and the Host of every request.
type recordingTLS struct {
	srv   *httptest.Server
	mu    sync.Mutex
	snis  []string
	hosts []string
}

func newRecordingTLS(t *testing.T) *recordingTLS {
	t.Helper()
	rs := &recordingTLS{}
	rs.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.hosts = append(rs.hosts, r.Host)
		rs.mu.Unlock()
		fmt.Fprintln(w, "outside "+r.Host)
	}))
	rs.srv.Listener.Close()
	var err error
	if rs.srv.Listener, err = net.Listen("tcp4", "0.0.0.0:0"); err != nil {
		t.Fatal(err)
	}
	rs.srv.TLS = &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		rs.mu.Lock()
		rs.snis = append(rs.snis, h.ServerName)
		rs.mu.Unlock()
		return nil, nil
	}}
	rs.srv.StartTLS()
	t.Cleanup(rs.srv.Close)
	return rs
}

func (rs *recordingTLS) port() int { return rs.srv.Listener.Addr().(*net.TCPAddr).Port }

func (rs *recordingTLS) seen() (snis, hosts []string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]string(nil), rs.snis...), append([]string(nil), rs.hosts...)
}

// waitLogEntry polls podbot network log --json for sandbox name until an
// entry satisfies match, and fails the test after ten seconds.
func waitLogEntry(t *testing.T, ctx context.Context, e engineUnderTest, name, what string, match func(egress.LogEntry) bool) egress.LogEntry {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := runPodbot(t, ctx, e, "network", "log", "--json", name)
		if r.Code == 0 {
			for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
				var le egress.LogEntry
				if json.Unmarshal([]byte(line), &le) == nil && match(le) {
					return le
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the decision log lacks %s: %d\n%s\n%s", what, r.Code, r.Stdout, r.Stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestEgressDomainFrontingRefused plays an agent that fronts a denied name
// behind an allowed one: a CONNECT to allowed.test (pinned to the outside
// server, exact rule) whose TLS ClientHello names denied.test is closed by
// the proxy before the ClientHello leaves: the handshake fails, the
// outside server sees no ClientHello and no request, and the decision log
// has a deny entry for allowed.test that gives the SNI as the reason. The
// control, the same tunnel with the matching SNI, answers. On both
// engines.
func TestEgressDomainFrontingRefused(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		conn := connectEngine(t, ctx, e)
		gw := bridgeGateway(t, ctx, e)
		outside := newRecordingTLS(t)
		port := outside.port()

		name := testName(e, "egressfront")
		sb := launch(t, ctx, conn, podbot.LaunchOptions{
			Config: launchConfig(), Intent: launchplan.IntentInteractive, Name: name,
			SidecarPath: sidecarBin(t), RuntimeDir: runtimeDir(t),
			Egress: &launchplan.Egress{Mode: egress.ModeAllowlist, Policy: egress.Policy{
				Rules:   []egress.Rule{{Host: "allowed.test", Ports: []int{port}, Source: "test"}},
				Resolve: map[string]string{"allowed.test": gw, "denied.test": gw},
			}},
		})
		target := fmt.Sprintf("allowed.test:%d", port)

		out := mustExecIn(t, ctx, conn, sb, "python3", "-c", frontScript, target, "denied.test")
		t.Logf("%s, fronting denied.test behind %s:\n%s", e.Name, target, out)
		if !strings.Contains(out, "connect HTTP/1.1 200") || !strings.Contains(out, "tls refused") {
			t.Fatalf("the fronted handshake was not refused after the CONNECT was admitted:\n%s", out)
		}
		snis, hosts := outside.seen()
		if len(snis) != 0 || len(hosts) != 0 {
			t.Fatalf("the outside server saw the fronted tunnel: ClientHello SNIs %q, requests %q", snis, hosts)
		}
		le := waitLogEntry(t, ctx, e, name, "the SNI refusal of allowed.test", func(le egress.LogEntry) bool {
			return le.Host == "allowed.test" && le.Port == port && le.Decision == egress.DecisionDeny && strings.Contains(le.Reason, "SNI")
		})
		t.Logf("logged: %+v", le)

		// The control: the matching SNI gets through the same proxy.
		out = mustExecIn(t, ctx, conn, sb, "python3", "-c", frontScript, target, "allowed.test")
		t.Logf("%s, matching SNI:\n%s", e.Name, out)
		if !strings.Contains(out, "tls ok HTTP/1.1 200") || !strings.Contains(out, "outside allowed.test") {
			t.Fatalf("the tunnel with the matching SNI did not answer:\n%s", out)
		}
		if snis, hosts := outside.seen(); len(snis) != 1 || snis[0] != "allowed.test" || len(hosts) != 1 || hosts[0] != "allowed.test" {
			t.Fatalf("outside server saw SNIs %q and requests %q, want allowed.test once", snis, hosts)
		}
	})
}

// TestEgressPrivateAddressNeedsExactRule plays DNS rebinding: names that
// only a wildcard rule (*.wild.test) allows, pinned by network.resolve to
// the bridge gateway (where the outside server listens), the metadata
// address and loopback, are refused with 403 over plain HTTP forwarding
// and over HTTPS (CONNECT), the outside server sees nothing, and each
// refusal is logged with its internal address. The control: the same
// gateway under a name with an exact rule (exact.wild.test) answers over
// both. On both engines.
func TestEgressPrivateAddressNeedsExactRule(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		conn := connectEngine(t, ctx, e)
		gw := bridgeGateway(t, ctx, e)

		var mu sync.Mutex
		var hosts []string
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			hosts = append(hosts, r.Host)
			mu.Unlock()
			fmt.Fprintln(w, "outside "+r.Host)
		})
		ln, err := net.Listen("tcp4", "0.0.0.0:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		tlsSrv := newRecordingTLS(t)
		port, tlsPort := ln.Addr().(*net.TCPAddr).Port, tlsSrv.port()

		refused := map[string]string{ // name -> the internal address it is pinned to
			"gw.wild.test":   gw,
			"meta.wild.test": "169.254.169.254",
			"lo.wild.test":   "127.0.0.1",
		}
		resolve := map[string]string{"exact.wild.test": gw}
		for h, a := range refused {
			resolve[h] = a
		}
		name := testName(e, "egressprivate")
		sb := launch(t, ctx, conn, podbot.LaunchOptions{
			Config: launchConfig(), Intent: launchplan.IntentInteractive, Name: name,
			SidecarPath: sidecarBin(t), RuntimeDir: runtimeDir(t),
			Egress: &launchplan.Egress{Mode: egress.ModeAllowlist, Policy: egress.Policy{
				Rules: []egress.Rule{
					{Host: "*.wild.test", Ports: []int{port, tlsPort}, Source: "test wildcard"},
					{Host: "exact.wild.test", Ports: []int{port, tlsPort}, Source: "test exact"},
				},
				Resolve: resolve,
			}},
		})

		var urls []string
		for _, h := range []string{"gw.wild.test", "meta.wild.test", "lo.wild.test", "exact.wild.test"} {
			urls = append(urls, fmt.Sprintf("http://%s:%d/", h, port), fmt.Sprintf("https://%s:%d/", h, tlsPort))
		}
		out := mustExecIn(t, ctx, conn, sb, append([]string{"python3", "-c", fetchScript}, urls...)...)
		t.Logf("%s through the proxy:\n%s", e.Name, out)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != len(urls) {
			t.Fatalf("want %d lines, got:\n%s", len(urls), out)
		}
		for i, u := range urls {
			line := lines[i]
			if !strings.HasPrefix(line, u+" ") {
				t.Fatalf("line %d is not for %s: %s", i, u, line)
			}
			if strings.Contains(u, "exact.wild.test") {
				if !strings.Contains(line, " 200 outside exact.wild.test") {
					t.Errorf("%s: the exact rule did not let the private address through: %s", e.Name, line)
				}
				continue
			}
			if !strings.Contains(line, " refused") || !strings.Contains(line, "403") {
				t.Errorf("%s: a wildcard-only name pinned to an internal address was not refused with 403: %s", e.Name, line)
			}
		}
		mu.Lock()
		got := append([]string(nil), hosts...)
		mu.Unlock()
		snis, tlsHosts := tlsSrv.seen()
		got = append(got, tlsHosts...)
		for _, h := range got {
			if !strings.HasPrefix(h, "exact.wild.test") {
				t.Errorf("the outside server got a request for %s", h)
			}
		}
		if len(snis) != 1 || snis[0] != "exact.wild.test" {
			t.Errorf("outside TLS server saw ClientHellos for %q, want exact.wild.test alone", snis)
		}
		for h, a := range refused {
			for _, p := range []int{port, tlsPort} {
				waitLogEntry(t, ctx, e, name, fmt.Sprintf("the refusal of %s:%d", h, p), func(le egress.LogEntry) bool {
					return le.Host == h && le.Port == p && le.Decision == egress.DecisionDeny && strings.Contains(le.Reason, "internal address "+a)
				})
			}
		}
	})
}

// TestEgressPruneRemovesOrphanDirs: an allowlist sandbox removed together
// with its proxy behind podbot's back leaves its egress directory (policy,
// log) that no container points to any more; prune finds it under the
// egress root by its marker and removes it, with the leftover network. A
// directory marked for another engine, and one whose marker is younger
// than prune's grace, stay. On both engines.
func TestEgressPruneRemovesOrphanDirs(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		conn := connectEngine(t, ctx, e)
		rt := runtimeDir(t)
		name := testName(e, "egressorphan")
		removeOnCleanup(t, e, name)
		t.Cleanup(func() {
			_ = e.API.ContainerRemove(context.Background(), egressnet.ProxyName(name), container.RemoveOptions{Force: true})
			_ = e.API.NetworkRemove(context.Background(), egressnet.NetworkName(name))
		})
		res, err := podbot.Create(ctx, conn, podbot.CreateOptions{Config: launchConfig(), Name: name, SidecarPath: sidecarBin(t), RuntimeDir: rt,
			Egress: &launchplan.Egress{Mode: egress.ModeAllowlist}})
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		for _, id := range []string{res.ID, egressnet.ProxyName(name)} {
			if err := e.API.ContainerRemove(ctx, id, container.RemoveOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
		}
		dirs, _ := egressnet.DirsFor(rt, name)
		marker := filepath.Join(dirs.Root, egressnet.MarkerFile)
		if b, err := os.ReadFile(marker); err != nil || string(b) != conn.Endpoint().String() {
			t.Fatalf("marker %s = %q, %v; want %s", marker, b, err, conn.Endpoint())
		}
		// The same leftover, as another engine's launch would mark it.
		other, _ := egressnet.DirsFor(rt, name+"-other")
		if err := other.Make(); err != nil {
			t.Fatal(err)
		}
		if err := other.Mark("unix:///another/engine.sock"); err != nil {
			t.Fatal(err)
		}
		past := time.Now().Add(-2 * time.Minute)
		for _, m := range []string{marker, filepath.Join(other.Root, egressnet.MarkerFile)} {
			if err := os.Chtimes(m, past, past); err != nil {
				t.Fatal(err)
			}
		}
		// A fresh launch's directory (marker now) is left alone.
		young, _ := egressnet.DirsFor(rt, name+"-young")
		if err := young.Make(); err != nil {
			t.Fatal(err)
		}
		if err := young.Mark(conn.Endpoint().String()); err != nil {
			t.Fatal(err)
		}

		pr, err := podbot.Prune(ctx, conn, podbot.PruneOptions{RuntimeDir: rt})
		if err != nil {
			t.Fatalf("prune: %v", err)
		}
		t.Logf("prune: egress %v, egress dirs %v", pr.Egress, pr.EgressDirs)
		if !slices.Contains(pr.EgressDirs, name) {
			t.Errorf("prune did not report %s's egress directory: %v", name, pr.EgressDirs)
		}
		if _, err := os.Stat(dirs.Root); !os.IsNotExist(err) {
			t.Errorf("the orphan egress directory is still there: %v", err)
		}
		for _, d := range []egressnet.Dirs{other, young} {
			if _, err := os.Stat(d.Root); err != nil {
				t.Errorf("prune removed %s: %v", d.Root, err)
			}
		}
		if _, err := conn.InspectNetwork(ctx, egressnet.NetworkName(name)); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("network after prune: %v", err)
		}
	})
}
