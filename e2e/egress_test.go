//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// attackScript runs inside an allowlist sandbox with the proxy variables
// unset and tries every way out it can: TCP to the outside server (by the
// bridge gateway and by the internal network's gateway, which is the
// engine host itself), UDP to both, DNS for an outside name, and IPv6. It
// prints one line per attempt: "NAME ok" when the attempt got through.
const attackScript = `
import socket, sys
gw, igw, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
def tcp(name, addr, fam=socket.AF_INET):
    s = socket.socket(fam, socket.SOCK_STREAM); s.settimeout(3)
    try:
        s.connect(addr); print(name, "ok")
    except Exception as e:
        print(name, "blocked", type(e).__name__, e)
    finally:
        s.close()
def udp(name, addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
    try:
        s.sendto(b"podbot-exfil", addr); s.recvfrom(64); print(name, "ok")
    except Exception as e:
        print(name, "blocked", type(e).__name__, e)
    finally:
        s.close()
tcp("tcp-bridge-gateway", (gw, port))
tcp("tcp-internal-gateway", (igw, port))
tcp("tcp-internal-gateway-dns", (igw, 53))
udp("udp-bridge-gateway", (gw, port))
udp("udp-internal-gateway-dns", (igw, 53))
# A real DNS query for an outside name, sent straight to the engine's
# resolver on the internal network's gateway (Podman's aardvark-dns
# forwards outside names there when it can be reached).
q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01"
for name, addr in (("dns-query-internal-gateway", (igw, 53)), ("dns-query-docker-embedded", ("127.0.0.11", 53))):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
    try:
        s.sendto(q, addr); s.recvfrom(512)
        # Any answer, even NXDOMAIN, means a resolver took the query and
        # forwarded the name: a DNS channel out.
        print(name, "ok (a resolver answered)")
    except Exception as e:
        print(name, "blocked", type(e).__name__, e)
    finally:
        s.close()
try:
    socket.getaddrinfo("example.com", 443); print("dns-outside ok")
except Exception as e:
    print("dns-outside blocked", type(e).__name__, e)
try:
    tcp("tcp6-link-local", ("fe80::1%eth0", port, 0, 0), socket.AF_INET6)
except Exception as e:
    print("tcp6-link-local blocked", type(e).__name__, e)
tcp("tcp6-loopback-host", ("::ffff:" + gw, port), socket.AF_INET6)
`

// TestEgressAllowlistNoDirectRoute plays a sandboxed agent that ignores
// HTTP_PROXY: on both engines, an allowlist sandbox reaches nothing but its
// proxy. The outside servers listen on every host address; direct TCP and
// UDP to them (through the bridge's gateway or the internal network's own
// gateway, the engine host), DNS for an outside name and IPv6 all fail.
// Removing the sandbox removes its proxy, network and directories.
func TestEgressAllowlistNoDirectRoute(t *testing.T) {
	t.Parallel() // long, and touches only what it names (see forEachEngine)
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		conn := connectEngine(t, ctx, e)
		gw := bridgeGateway(t, ctx, e)

		// The "outside": a TCP and a UDP server on every host address.
		ln, err := net.Listen("tcp4", "0.0.0.0:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_, _ = c.Write([]byte("outside\n"))
				c.Close()
			}
		}()
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp4", fmt.Sprintf("0.0.0.0:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		go func() {
			buf := make([]byte, 64)
			for {
				n, a, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				_, _ = pc.WriteTo(buf[:n], a)
			}
		}()

		rt := runtimeDir(t)
		name := testName(e, "egress")
		cfg := launchConfig()
		sb := launch(t, ctx, conn, podbot.LaunchOptions{
			Config: cfg, Intent: launchplan.IntentInteractive, Name: name,
			SidecarPath: sidecarBin(t), RuntimeDir: rt,
			Egress: &launchplan.Egress{Mode: egress.ModeAllowlist, Policy: egress.Policy{
				Rules: []egress.Rule{{Host: "outside.test", Ports: []int{port}, Source: "test"}}}},
		})

		// The sandbox is on the internal network alone, with the proxy env,
		// and its proxy runs.
		igw := checkAllowlistPlumbing(t, ctx, e, conn, sb.ID, name)

		r := execIn(t, ctx, conn, sb, "env", "-u", "HTTP_PROXY", "-u", "HTTPS_PROXY", "-u", "http_proxy", "-u", "https_proxy",
			"python3", "-c", attackScript, gw, igw, fmt.Sprint(port))
		t.Logf("attack from the sandbox on %s:\n%s%s", e.Name, r.stdout, r.stderr)
		if r.code != 0 || !strings.Contains(r.stdout, "tcp6-loopback-host") {
			t.Fatalf("attack script failed: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if strings.Contains(line, " ok") {
				t.Errorf("%s: the sandbox got out: %s", e.Name, line)
			}
		}

		// Removal takes the proxy, the network and the directories along.
		dirs, err := egressnet.DirsFor(rt, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dirs.PolicyPath()); err != nil {
			t.Fatalf("policy file: %v", err)
		}
		if _, err := podbot.Remove(ctx, conn, name, podbot.RemoveOptions{Force: true}); err != nil {
			t.Fatalf("remove: %v", err)
		}
		if _, err := conn.Inspect(ctx, egressnet.ProxyName(name), false); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("proxy still there after rm: %v", err)
		}
		if _, err := conn.InspectNetwork(ctx, egressnet.NetworkName(name)); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("network still there after rm: %v", err)
		}
		if _, err := os.Stat(dirs.Root); !os.IsNotExist(err) {
			t.Errorf("egress directory still there after rm: %v", err)
		}
	})
}

// TestEgressProxyFailureLeavesNothing: a proxy that cannot start fails the
// launch at the network step, and the network, proxy and directories are
// gone afterwards, on both engines.
func TestEgressProxyFailureLeavesNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		conn := connectEngine(t, ctx, e)
		rt := runtimeDir(t)
		name := testName(e, "egressfail")
		// A sidecar that is not podbot-sidecar: /bin/false exits at once.
		_, err := podbot.Launch(ctx, conn, podbot.LaunchOptions{
			Config: launchConfig(), Intent: launchplan.IntentInteractive, Name: name,
			SidecarPath: "/bin/false", RuntimeDir: rt,
			Egress: &launchplan.Egress{Mode: egress.ModeAllowlist},
		})
		var se *podbot.StepError
		if !errors.As(err, &se) || se.Step != podbot.StepNetwork {
			t.Fatalf("Launch error = %v, want a StepError at %q", err, podbot.StepNetwork)
		}
		for _, n := range []string{name, egressnet.ProxyName(name)} {
			if _, err := conn.Inspect(ctx, n, false); !errors.Is(err, errdefs.ErrNotFound) {
				t.Errorf("container %s left behind: %v", n, err)
			}
		}
		if _, err := conn.InspectNetwork(ctx, egressnet.NetworkName(name)); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("network left behind: %v", err)
		}
		dirs, _ := egressnet.DirsFor(rt, name)
		if _, err := os.Stat(dirs.Root); !os.IsNotExist(err) {
			t.Errorf("egress directory left behind: %v", err)
		}
	})
}

func sidecarBin(t *testing.T) string {
	t.Helper()
	p := suite.bin + "/podbot-sidecar"
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("podbot-sidecar: %v (run make build)", err)
	}
	return p
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// fetchScript fetches each URL through the proxy the sandbox's environment
// names (urllib reads HTTP_PROXY/HTTPS_PROXY) and prints "URL STATUS BODY"
// or "URL refused ERROR". HTTPS goes through CONNECT; the test server's
// certificate is not what is tested, so it is not verified.
const fetchScript = `
import ssl, sys, urllib.request
ctx = ssl._create_unverified_context()
for u in sys.argv[1:]:
    try:
        r = urllib.request.urlopen(u, timeout=10, context=ctx)
        print(u, r.status, r.read().decode().strip())
    except Exception as e:
        print(u, "refused", type(e).__name__, e)
`

// TestEgressProxyAllowDenyLive: through the sandbox's proxy an allowed host
// (pinned by network.resolve to the outside server, with an exact rule, as
// a private address needs) answers over HTTP and HTTPS (CONNECT); a denied
// one is refused and the refusal is in the decision log; podbot network
// allow lets it through on the running sandbox, without a restart. On both
// engines.
func TestEgressProxyAllowDenyLive(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		conn := connectEngine(t, ctx, e)
		gw := bridgeGateway(t, ctx, e)

		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "outside "+r.Host) })
		ln, err := net.Listen("tcp4", "0.0.0.0:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		tlsSrv := httptest.NewUnstartedServer(handler)
		tlsSrv.Listener.Close()
		if tlsSrv.Listener, err = net.Listen("tcp4", "0.0.0.0:0"); err != nil {
			t.Fatal(err)
		}
		tlsSrv.StartTLS()
		defer tlsSrv.Close()
		port := ln.Addr().(*net.TCPAddr).Port
		tlsPort := tlsSrv.Listener.Addr().(*net.TCPAddr).Port

		rt := runtimeDir(t)
		name := testName(e, "egressproxy")
		sb := launch(t, ctx, conn, podbot.LaunchOptions{
			Config: launchConfig(), Intent: launchplan.IntentInteractive, Name: name,
			SidecarPath: sidecarBin(t), RuntimeDir: rt,
			Egress: &launchplan.Egress{Mode: egress.ModeAllowlist, Policy: egress.Policy{
				Rules: []egress.Rule{
					{Host: "allowed.test", Ports: []int{port, tlsPort}, Source: "test"},
				},
				Resolve: map[string]string{"allowed.test": gw, "denied.test": gw},
			}},
		})
		allowed := fmt.Sprintf("http://allowed.test:%d/", port)
		allowedTLS := fmt.Sprintf("https://allowed.test:%d/", tlsPort)
		denied := fmt.Sprintf("http://denied.test:%d/", port)
		out := mustExecIn(t, ctx, conn, sb, "python3", "-c", fetchScript, allowed, allowedTLS, denied)
		t.Logf("%s through the proxy:\n%s", e.Name, out)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 3 || !strings.Contains(lines[0], " 200 outside allowed.test") || !strings.Contains(lines[1], " 200 outside allowed.test") ||
			!strings.Contains(lines[2], " refused") {
			t.Fatalf("allowed over HTTP and HTTPS, denied refused: want that, got:\n%s", out)
		}

		// The refusal is logged.
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := runPodbot(t, ctx, e, "network", "log", "--json", name)
			if r.Code == 0 && strings.Contains(r.Stdout, `"host":"denied.test"`) && strings.Contains(r.Stdout, `"decision":"deny"`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the decision log lacks the refusal of denied.test: %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
			}
			time.Sleep(200 * time.Millisecond)
		}

		// A live allow is in force when the command returns (the proxy
		// confirmed it), without a restart.
		if r := runPodbot(t, ctx, e, "network", "allow", name, fmt.Sprintf("denied.test:%d", port)); r.Code != 0 {
			t.Fatalf("network allow: %d %s", r.Code, r.Stderr)
		}
		started := mustInspectStarted(t, ctx, conn, sb.ID)
		if out := mustExecIn(t, ctx, conn, sb, "python3", "-c", fetchScript, denied); !strings.Contains(out, " 200 outside denied.test") {
			t.Fatalf("network allow returned before the running proxy had the rule in force:\n%s", out)
		}
		if again := mustInspectStarted(t, ctx, conn, sb.ID); again != started {
			t.Fatalf("the sandbox was restarted (%s, then %s)", started, again)
		}
		// And a live deny closes it again, also in force on return.
		if r := runPodbot(t, ctx, e, "network", "deny", name, fmt.Sprintf("denied.test:%d", port)); r.Code != 0 {
			t.Fatalf("network deny: %d %s", r.Code, r.Stderr)
		}
		if out := mustExecIn(t, ctx, conn, sb, "python3", "-c", fetchScript, denied); !strings.Contains(out, " refused") {
			t.Fatalf("network deny returned before the running proxy had it in force:\n%s", out)
		}
	})
}

func mustInspectStarted(t *testing.T, ctx context.Context, conn *engine.Conn, id string) string {
	t.Helper()
	in, err := conn.Inspect(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	return in.State.StartedAt
}
