//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
)

// k8sEgressServers are an HTTP and an HTTPS test server on the test
// cluster's stand-in for a public address (k8sOutsidePublic, on the host),
// answering "outside HOST". A proxy Pod's NetworkPolicy lets it out there,
// not to the host's private address on the Pod bridge.
func k8sEgressServers(t *testing.T) (addr string, port, tlsPort int) {
	t.Helper()
	addr = k8sOutsidePublic
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "outside "+r.Host) })
	ln, err := net.Listen("tcp4", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v (scripts/k8s.sh up puts it on the host's Pod bridge %s)", addr, err, k8sPodBridge)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	tlsSrv := httptest.NewUnstartedServer(handler)
	tlsSrv.Listener.Close()
	if tlsSrv.Listener, err = net.Listen("tcp4", net.JoinHostPort(addr, "0")); err != nil {
		t.Fatal(err)
	}
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	return addr, ln.Addr().(*net.TCPAddr).Port, tlsSrv.Listener.Addr().(*net.TCPAddr).Port
}

// k8sEgressConfig is an allowlist configuration allowing allowed.test on
// the two ports, with both test names pinned to the host (no DNS on the
// test cluster) and no preset.
func k8sEgressConfig(addr string, port, tlsPort int) string {
	return fmt.Sprintf(`[network]
mode = "allowlist"
presets = []
allow = ["allowed.test:%d", "allowed.test:%d"]
resolve = ["allowed.test=%s", "denied.test=%s"]
`, port, tlsPort, addr, addr)
}

// egressObjectsLeft fails the test when the namespace still holds a proxy
// ConfigMap of podbot's.
func (c k8sTestCluster) egressObjectsLeft(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	cms, err := c.client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: egressnet.LabelRole})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		t.Errorf("ConfigMap %s left behind", cm.Name)
	}
}

// TestK8sEgressAllowlist: podbot create with network.mode = "allowlist" on
// the cluster makes the sandbox Pod, its egress proxy Pod, the proxy's
// ConfigMap and two NetworkPolicies, checked field by field and owned by
// the sandbox Pod; from the sandbox an allowed host answers over HTTP and
// HTTPS (CONNECT) through the proxy, a denied one is refused and the
// refusal is in the proxy's decision log (podbot network log); podbot
// network allow reaches the running proxy through the ConfigMap without a
// restart; podbot rm -f leaves nothing. That the sandbox cannot go around
// the proxy (the test cluster enforces NetworkPolicy) is
// TestK8sNetworkPolicyAllowlist's.
func TestK8sEgressAllowlist(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	addr, port, tlsPort := k8sEgressServers(t)
	pb := c.podbot(ns)
	pb.config = k8sEgressConfig(addr, port, tlsPort)
	pb.env = []string{"PODBOT_NETWORK_MODE=allowlist", "PODBOT_SIDECAR_PATH=" + sidecarBin(t)}

	r := pb.run(t, ctx, nil, "create", "--read-only", "--", "sleep", "3600")
	if r.Code != 0 {
		t.Fatalf("create: exit %d: %s", r.Code, r.Stderr)
	}
	name := strings.TrimSpace(r.Stdout)
	proxyName := kube.EgressName(name)

	sb, err := c.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := c.client.CoreV1().Pods(ns).Get(ctx, proxyName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("proxy Pod: %v", err)
	}
	ownedBySandbox := func(what string, refs []metav1.OwnerReference) {
		t.Helper()
		if len(refs) != 1 || refs[0].Kind != "Pod" || refs[0].Name != name || refs[0].UID != sb.UID {
			t.Errorf("%s owners %+v: want the sandbox Pod %s (%s)", what, refs, name, sb.UID)
		}
	}

	// The proxy Pod: running, hardened, labelled for the policies only.
	if proxy.Status.Phase != corev1.PodRunning || proxy.Status.PodIP == "" {
		t.Errorf("proxy phase %s ip %q", proxy.Status.Phase, proxy.Status.PodIP)
	}
	ownedBySandbox("proxy Pod", proxy.OwnerReferences)
	if proxy.Labels[egressnet.LabelSandbox] != name || proxy.Labels[egressnet.LabelRole] != egressnet.RoleProxy || proxy.Labels[launchplan.LabelManaged] != "" {
		t.Errorf("proxy labels %v", proxy.Labels)
	}
	ps := proxy.Spec
	if *ps.AutomountServiceAccountToken || *ps.EnableServiceLinks || ps.HostNetwork || *ps.SecurityContext.RunAsUser != egressnet.ProxyUser ||
		!*ps.SecurityContext.RunAsNonRoot || ps.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("proxy pod spec: sa token %v links %v user %d restart %s", *ps.AutomountServiceAccountToken, *ps.EnableServiceLinks,
			*ps.SecurityContext.RunAsUser, ps.RestartPolicy)
	}
	pc := ps.Containers[0]
	if pc.Name != kube.EgressContainerName || pc.Image != c.image || !*pc.SecurityContext.ReadOnlyRootFilesystem ||
		*pc.SecurityContext.AllowPrivilegeEscalation || !slices.Equal(pc.SecurityContext.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		len(pc.SecurityContext.Capabilities.Add) != 0 {
		t.Errorf("proxy container %s image %s security %+v", pc.Name, pc.Image, pc.SecurityContext)
	}
	if !slices.Equal(pc.Command, kube.EgressCommand(false, false)) {
		t.Errorf("proxy command %q", pc.Command)
	}

	// The sandbox points at the proxy and has no resolver.
	env := map[string]string{}
	for _, e := range sb.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	wantProxy := fmt.Sprintf("http://%s:%d", proxy.Status.PodIP, egressnet.ProxyPort)
	if env["HTTPS_PROXY"] != wantProxy || env["HTTP_PROXY"] != wantProxy {
		t.Errorf("sandbox proxy env %v, want %s", env, wantProxy)
	}
	if sb.Spec.DNSPolicy != corev1.DNSNone || !slices.Equal(sb.Spec.DNSConfig.Nameservers, []string{"127.0.0.1"}) {
		t.Errorf("sandbox DNS %s %+v", sb.Spec.DNSPolicy, sb.Spec.DNSConfig)
	}

	// The policy ConfigMap.
	cm, err := c.client.CoreV1().ConfigMaps(ns).Get(ctx, proxyName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("policy ConfigMap: %v", err)
	}
	ownedBySandbox("ConfigMap", cm.OwnerReferences)
	if pol := cm.Data[egressnet.PolicyFile]; !strings.Contains(pol, `"host": "allowed.test"`) || !strings.Contains(pol, `"denied.test": "`+addr+`"`) {
		t.Errorf("policy file:\n%s", pol)
	}

	// The sandbox's NetworkPolicy: no ingress, egress to its proxy's port only.
	snp, err := c.client.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ownedBySandbox("sandbox NetworkPolicy", snp.OwnerReferences)
	if len(snp.Spec.Ingress) != 0 || len(snp.Spec.Egress) != 1 || len(snp.Spec.Egress[0].To) != 1 || snp.Spec.Egress[0].To[0].IPBlock != nil ||
		snp.Spec.Egress[0].To[0].PodSelector.MatchLabels[egressnet.LabelSandbox] != name || len(snp.Spec.Egress[0].Ports) != 1 ||
		snp.Spec.Egress[0].Ports[0].Port.IntValue() != egressnet.ProxyPort {
		t.Errorf("sandbox policy %+v", snp.Spec)
	}
	// The proxy's NetworkPolicy: ingress from the sandbox, egress to public
	// addresses and the cluster DNS.
	pnp, err := c.client.NetworkingV1().NetworkPolicies(ns).Get(ctx, proxyName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ownedBySandbox("proxy NetworkPolicy", pnp.OwnerReferences)
	if in := pnp.Spec.Ingress; len(in) != 1 || in[0].From[0].PodSelector.MatchLabels[launchplan.LabelSession] != sb.Labels[launchplan.LabelSession] {
		t.Errorf("proxy ingress %+v", in)
	}
	if eg := pnp.Spec.Egress; len(eg) != 2 || eg[0].To[0].IPBlock == nil || eg[0].To[0].IPBlock.CIDR != "0.0.0.0/0" ||
		!slices.Contains(eg[0].To[0].IPBlock.Except, "169.254.0.0/16") || !slices.Contains(eg[0].To[0].IPBlock.Except, "10.0.0.0/8") {
		t.Errorf("proxy egress %+v", eg)
	}
	if !slices.Equal(pnp.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
		t.Errorf("proxy policy types %v", pnp.Spec.PolicyTypes)
	}

	// The sandbox reaches its proxy Pod. The Kubernetes network model
	// promises Pod-to-Pod traffic; on a host where br_netfilter passes
	// bridged frames through an iptables FORWARD chain whose policy is DROP
	// (what dockerd sets up) and nothing accepts the Pod bridge, it is
	// dropped: say so rather than report the proxy broken.
	probe := fmt.Sprintf("import socket; socket.create_connection((%q, %d), timeout=5); print('reached')", proxy.Status.PodIP, egressnet.ProxyPort)
	if r := pb.run(t, ctx, nil, "exec", name, "--", "python3", "-c", probe); !strings.Contains(r.Stdout, "reached") {
		t.Fatalf("the sandbox Pod cannot open a TCP connection to its proxy Pod at %s:%d (exit %d: %s): Pod-to-Pod traffic is dropped on this cluster; "+
			"with br_netfilter and an iptables FORWARD policy of DROP the host needs `iptables -I FORWARD -i %s -o %s -j ACCEPT`",
			proxy.Status.PodIP, egressnet.ProxyPort, r.Code, lastLine(r.Stderr), k8sPodBridge, k8sPodBridge)
	}

	// Through the proxy: allowed over HTTP and HTTPS, denied refused.
	allowed := fmt.Sprintf("http://allowed.test:%d/", port)
	allowedTLS := fmt.Sprintf("https://allowed.test:%d/", tlsPort)
	denied := fmt.Sprintf("http://denied.test:%d/", port)
	r = pb.run(t, ctx, nil, "exec", name, "--", "python3", "-c", fetchScript, allowed, allowedTLS, denied)
	t.Logf("through the proxy:\n%s", r.Stdout)
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if r.Code != 0 || len(lines) != 3 || !strings.Contains(lines[0], " 200 outside allowed.test") ||
		!strings.Contains(lines[1], " 200 outside allowed.test") || !strings.Contains(lines[2], " refused") {
		t.Fatalf("allowed over HTTP and HTTPS, denied refused: want that, got exit %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	// A direct connection (no proxy) is refused by the NetworkPolicy:
	// TestK8sNetworkPolicyAllowlist.

	// The refusal is in the proxy's decision log, read by podbot network log.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := pb.run(t, ctx, nil, "network", "log", "--json", name)
		if r.Code == 0 && strings.Contains(r.Stdout, `"host":"denied.test"`) && strings.Contains(r.Stdout, `"decision":"deny"`) &&
			strings.Contains(r.Stdout, `"host":"allowed.test"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the decision log lacks allowed.test and the refusal of denied.test: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r := pb.run(t, ctx, nil, "network", "show", "--json", name); r.Code != 0 || !strings.Contains(r.Stdout, `"allowed.test"`) ||
		!strings.Contains(r.Stdout, proxy.Status.PodIP) {
		t.Errorf("network show: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}

	// A live allow reaches the running proxy through the ConfigMap (the
	// kubelet's sync, about a minute), without a restart of either Pod.
	started := time.Now()
	if r := pb.run(t, ctx, nil, "network", "allow", name, fmt.Sprintf("denied.test:%d", port)); r.Code != 0 {
		t.Fatalf("network allow: exit %d: %s", r.Code, r.Stderr)
	}
	for {
		r := pb.run(t, ctx, nil, "exec", name, "--", "python3", "-c", fetchScript, denied)
		if strings.Contains(r.Stdout, " 200 outside denied.test") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("network allow did not reach the proxy after %s:\n%s", time.Since(started).Round(time.Second), r.Stdout)
		}
		time.Sleep(2 * time.Second)
	}
	t.Logf("network allow took effect after %s", time.Since(started).Round(time.Second))
	for _, n := range []string{name, proxyName} {
		p, err := c.client.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rc := p.Status.ContainerStatuses[0].RestartCount; rc != 0 || p.UID != map[string]types.UID{name: sb.UID, proxyName: proxy.UID}[n] {
			t.Errorf("Pod %s restarted (%d) or replaced", n, rc)
		}
	}

	if r := pb.run(t, ctx, nil, "rm", "-f", name); r.Code != 0 {
		t.Fatalf("rm: exit %d: %s", r.Code, r.Stderr)
	}
	c.waitGone(t, ctx, ns)
	c.nothingLeft(t, ctx, ns)
	c.egressObjectsLeft(t, ctx, ns)
}

// TestK8sEgressInterruptLeavesNothing: Ctrl-C while the proxy Pod cannot
// be scheduled (a node selector no node has) ends podbot create with 130
// and deletes the proxy Pod, its ConfigMap and its NetworkPolicy.
func TestK8sEgressInterruptLeavesNothing(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	addr, port, tlsPort := k8sEgressServers(t)
	pb := c.podbot(ns)
	pb.config = k8sEgressConfig(addr, port, tlsPort) + "[kubernetes]\nnode_selector = { \"podbot.e2e/no-such-node\" = \"x\" }\n"
	pb.env = []string{"PODBOT_NETWORK_MODE=allowlist", "PODBOT_SIDECAR_PATH=" + sidecarBin(t)}
	c.interruptOncePodAppears(t, ctx, ns, pb.cmd(t, ctx, "create", "--", "sleep", "3600"),
		egressnet.LabelRole+"="+egressnet.RoleProxy, "proxy Pod")
	c.waitGone(t, ctx, ns)
	c.nothingLeft(t, ctx, ns)
	c.egressObjectsLeft(t, ctx, ns)
}

// TestK8sEgressRun: podbot run --rm with network.mode = "allowlist" on the
// cluster: the agent, in its Pod, reaches an allowed host through its proxy
// Pod (HTTP_PROXY from the Pod's environment) and is refused a denied one;
// when it exits, the sandbox, its proxy and their objects are gone.
func TestK8sEgressRun(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	addr, port, tlsPort := k8sEgressServers(t)
	pb := c.podbot(ns)
	script := fmt.Sprintf("python3 -c '%s' https://allowed.test:%d/ http://denied.test:%d/", fetchScript, tlsPort, port)
	pb.config = k8sRunConfig(script) + k8sEgressConfig(addr, port, tlsPort)
	pb.env = []string{"HOME=" + k8sHome(t, "{}"), "STUB_ALLOWED=x", "PODBOT_NETWORK_MODE=allowlist", "PODBOT_SIDECAR_PATH=" + sidecarBin(t)}
	r := pb.run(t, ctx, nil, "run", "--rm")
	t.Logf("the agent through its proxy:\n%s", r.Stdout)
	if r.Code != 0 || !strings.Contains(r.Stdout, " 200 outside allowed.test") || !strings.Contains(r.Stdout, "denied.test") ||
		!strings.Contains(r.Stdout, " refused HTTPError HTTP Error 403") {
		t.Fatalf("want allowed.test reached and denied.test refused (403 by the proxy); exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
	c.waitGone(t, ctx, ns)
	c.nothingLeft(t, ctx, ns)
	c.egressObjectsLeft(t, ctx, ns)
	c.noSecrets(t, ctx, ns)
}
