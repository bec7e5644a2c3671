//go:build e2e && kubernetes

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/kube"
)

// k8sPeerPort is the port the peer Pod listens on.
const k8sPeerPort = 8080

// tcpProbeScript tries a TCP connection to each HOST:PORT argument (3 s
// each) and prints "HOST:PORT open" or "HOST:PORT closed ERROR".
const tcpProbeScript = `
import socket, sys
for a in sys.argv[1:]:
    h, p = a.rsplit(":", 1)
    try:
        socket.create_connection((h, int(p)), timeout=3).close()
        print(a, "open")
    except Exception as e:
        print(a, "closed", type(e).__name__, e)
`

// netpolServer is a plain HTTP server on addr (a host address Pods reach)
// answering "outside HOST"; it returns addr:port.
func netpolServer(t *testing.T, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp4", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v (scripts/k8s.sh up puts %s and %s beside 10.213.0.1 on the host's Pod bridge %s)",
			addr, err, k8sOutsidePublic, k8sOutsideLinkLocal, k8sPodBridge)
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "outside "+r.Host) }),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// netpolPlainPod starts a Pod no NetworkPolicy selects (no podbot labels)
// running cmd, waits until it runs and returns its IP.
func (c k8sTestCluster) netpolPlainPod(t *testing.T, ctx context.Context, ns, name string, cmd ...string) string {
	t.Helper()
	pod := hardenedSmokePod(name, c.image)
	if len(cmd) > 0 {
		pod.Spec.Containers[0].Command = cmd
	}
	if _, err := c.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Pod %s: %v", name, err)
	}
	c.waitPodRunning(t, ctx, ns, name)
	p, err := c.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.PodIP == "" {
		t.Fatalf("Pod %s runs without an IP", name)
	}
	return p.Status.PodIP
}

// netpolPeer is a plain Pod listening on k8sPeerPort; it returns IP:port
// once something answers there.
func (c k8sTestCluster) netpolPeer(t *testing.T, ctx context.Context, ns string) string {
	t.Helper()
	ip := c.netpolPlainPod(t, ctx, ns, "peer", "python3", "-m", "http.server", strconv.Itoa(k8sPeerPort), "--directory", "/tmp")
	addr := net.JoinHostPort(ip, strconv.Itoa(k8sPeerPort))
	for {
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			conn.Close()
			return addr
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the peer Pod never listened on %s: %v", addr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// probeResults parses tcpProbeScript's output into target -> open.
func probeResults(t *testing.T, out string, targets []string) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 {
			got[f[0]] = f[1] == "open"
		}
	}
	for _, tg := range targets {
		if _, ok := got[tg]; !ok {
			t.Fatalf("the probe printed nothing for %s:\n%s", tg, out)
		}
	}
	return got
}

// expectProbe fails the test for each target whose reachability is not want.
func expectProbe(t *testing.T, who, out string, want map[string]bool) {
	t.Helper()
	targets := make([]string, 0, len(want))
	for tg := range want {
		targets = append(targets, tg)
	}
	got := probeResults(t, out, targets)
	for tg, w := range want {
		if got[tg] != w {
			t.Errorf("%s -> %s: reachable %v, want %v", who, tg, got[tg], w)
		}
	}
	t.Logf("%s:\n%s", who, out)
}

// probeFromPlain runs tcpProbeScript in a plain Pod.
func (c k8sTestCluster) probeFromPlain(t *testing.T, ctx context.Context, ns, pod string, targets []string) string {
	t.Helper()
	r := c.exec(t, ctx, ns, pod, "", append([]string{"python3", "-c", tcpProbeScript}, targets...)...)
	if r.code != 0 {
		t.Fatalf("probe in %s: exit %d: %s", pod, r.code, r.stderr)
	}
	return r.stdout
}

// probeFromSandbox runs tcpProbeScript in a podbot sandbox (podbot exec).
func probeFromSandbox(t *testing.T, ctx context.Context, pb k8sPodbot, name string, targets []string) string {
	t.Helper()
	r := pb.run(t, ctx, nil, append([]string{"exec", name, "--", "python3", "-c", tcpProbeScript}, targets...)...)
	if r.Code != 0 {
		t.Fatalf("probe in sandbox %s: exit %d: %s", name, r.Code, r.Stderr)
	}
	return r.Stdout
}

// TestK8sNetworkPolicyNone: a hostile sandbox in network.mode = "none"
// tries every way out and fails: TCP to an HTTP server on the host (its
// address on the Pod bridge), to a stand-in for the public internet, to
// a link-local address (the metadata range), to another Pod, and to
// 169.254.169.254 and a private address with no server behind them. The
// control: a plain Pod of the same namespace that no NetworkPolicy selects
// reaches the first four, so the refusals are the policy's doing and not
// a dead network. Nothing reaches the sandbox either.
func TestK8sNetworkPolicyNone(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	host := netpolServer(t, podReachableAddr(t))
	public := netpolServer(t, k8sOutsidePublic)
	linkLocal := netpolServer(t, k8sOutsideLinkLocal)
	peer := c.netpolPeer(t, ctx, ns)
	c.netpolPlainPod(t, ctx, ns, "control")
	reachable := []string{host, public, linkLocal, peer}

	control := c.probeFromPlain(t, ctx, ns, "control", reachable)
	expectProbe(t, "control Pod (no NetworkPolicy)", control, map[string]bool{host: true, public: true, linkLocal: true, peer: true})

	pb := c.podbot(ns)
	r := pb.run(t, ctx, nil, "create", "--read-only", "--", "sleep", "3600")
	if r.Code != 0 {
		t.Fatalf("create: exit %d: %s", r.Code, r.Stderr)
	}
	name := strings.TrimSpace(r.Stdout)
	if _, err := c.client.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the sandbox's NetworkPolicy: %v", err)
	}
	metadata, private := "169.254.169.254:80", "192.168.0.1:80"
	out := probeFromSandbox(t, ctx, pb, name, append(reachable, metadata, private))
	expectProbe(t, "sandbox (network none)", out, map[string]bool{host: false, public: false, linkLocal: false, peer: false, metadata: false, private: false})

	// No ingress: the control Pod cannot open a connection to a listener
	// in the sandbox, though the sandbox's own loopback can.
	sb, err := c.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listen := pb.cmd(t, ctx, "exec", name, "--", "python3", "-m", "http.server", "8081", "--directory", "/tmp")
	if err := listen.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = listen.Process.Kill(); _ = listen.Wait() })
	inside := net.JoinHostPort("127.0.0.1", "8081")
	for {
		r := pb.run(t, ctx, nil, "exec", name, "--", "python3", "-c", tcpProbeScript, inside)
		if strings.Contains(r.Stdout, inside+" open") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the listener in the sandbox never came up: %s %s", r.Stdout, r.Stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	sbAddr := net.JoinHostPort(sb.Status.PodIP, "8081")
	expectProbe(t, "control Pod to the sandbox", c.probeFromPlain(t, ctx, ns, "control", []string{sbAddr}), map[string]bool{sbAddr: false})

	if r := pb.run(t, ctx, nil, "rm", "-f", name); r.Code != 0 {
		t.Fatalf("rm: exit %d: %s", r.Code, r.Stderr)
	}
}

// TestK8sNetworkPolicyAllowlist: two sandboxes in network.mode =
// "allowlist" on the enforcing cluster. From sandbox A: a direct TCP
// connection to the allowed host's address (bypassing the proxy) fails, as
// do the host's private address and sandbox B's proxy Pod, while its own
// proxy answers; through its proxy the allowed host answers and a denied
// one is refused (403, the proxy's decision); an allowlisted host pinned
// to a private address (the proxy lets an exact rule through) fails all
// the same, since the proxy Pod's own NetworkPolicy refuses private
// ranges. From inside proxy Pod A (exec into its container): the public
// stand-in answers, the private and link-local ones and another Pod do
// not. The control: a plain Pod reaches every one of those addresses.
func TestK8sNetworkPolicyAllowlist(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	public := netpolServer(t, k8sOutsidePublic)
	private := netpolServer(t, podReachableAddr(t))
	linkLocal := netpolServer(t, k8sOutsideLinkLocal)
	_, publicPort, _ := net.SplitHostPort(public)
	_, privatePort, _ := net.SplitHostPort(private)
	peer := c.netpolPeer(t, ctx, ns)
	c.netpolPlainPod(t, ctx, ns, "control")

	pb := c.podbot(ns)
	pb.config = fmt.Sprintf(`[network]
mode = "allowlist"
presets = []
allow = ["allowed.test:%s", "private.test:%s"]
resolve = ["allowed.test=%s", "denied.test=%s", "private.test=%s"]
`, publicPort, privatePort, k8sOutsidePublic, k8sOutsidePublic, podReachableAddr(t))
	pb.env = []string{"PODBOT_NETWORK_MODE=allowlist", "PODBOT_SIDECAR_PATH=" + sidecarBin(t)}
	create := func() (name, proxyAddr string) {
		t.Helper()
		r := pb.run(t, ctx, nil, "create", "--read-only", "--", "sleep", "3600")
		if r.Code != 0 {
			t.Fatalf("create: exit %d: %s", r.Code, r.Stderr)
		}
		name = strings.TrimSpace(r.Stdout)
		p, err := c.client.CoreV1().Pods(ns).Get(ctx, kube.EgressName(name), metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			t.Fatalf("proxy Pod of %s: %v (%+v)", name, err, p.Status)
		}
		return name, net.JoinHostPort(p.Status.PodIP, strconv.Itoa(egressnet.ProxyPort))
	}
	a, proxyA := create()
	_, proxyB := create()

	// The control: with no NetworkPolicy every address answers.
	control := c.probeFromPlain(t, ctx, ns, "control", []string{public, private, linkLocal, peer})
	expectProbe(t, "control Pod (no NetworkPolicy)", control, map[string]bool{public: true, private: true, linkLocal: true, peer: true})

	// Sandbox A: its own proxy only.
	out := probeFromSandbox(t, ctx, pb, a, []string{proxyA, public, private, linkLocal, peer, proxyB})
	expectProbe(t, "sandbox A (allowlist)", out, map[string]bool{proxyA: true, public: false, private: false, linkLocal: false, peer: false, proxyB: false})

	// Through the proxy.
	allowed := fmt.Sprintf("http://allowed.test:%s/", publicPort)
	denied := fmt.Sprintf("http://denied.test:%s/", publicPort)
	privateURL := fmt.Sprintf("http://private.test:%s/", privatePort)
	r := pb.run(t, ctx, nil, "exec", a, "--", "python3", "-c", fetchScript, allowed, denied, privateURL)
	t.Logf("sandbox A through its proxy:\n%s", r.Stdout)
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if r.Code != 0 || len(lines) != 3 || !strings.Contains(lines[0], " 200 outside allowed.test") ||
		!strings.Contains(lines[1], " refused HTTPError HTTP Error 403") || !strings.Contains(lines[2], " refused ") {
		t.Fatalf("want allowed.test answered, denied.test refused by the proxy (403) and private.test unreachable; exit %d:\n%s\n%s",
			r.Code, r.Stdout, r.Stderr)
	}

	// Inside proxy Pod A: out to public addresses only.
	pr := c.execIn(t, ctx, k8sFallback, ns, kube.EgressName(a), kube.EgressContainerName, "",
		"python3", "-c", tcpProbeScript, public, private, linkLocal, peer)
	if pr.code != 0 {
		t.Fatalf("probe in proxy Pod %s: exit %d: %s", kube.EgressName(a), pr.code, pr.stderr)
	}
	expectProbe(t, "proxy Pod A", pr.stdout, map[string]bool{public: true, private: false, linkLocal: false, peer: false})
}
