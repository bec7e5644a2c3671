//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/kube"
)

// k8sVaultServers are the outside servers of a cluster vault test on the
// host's address on the Pods' bridge: HTTPS with a test CA of its own
// (returned as a PEM file for network.upstream_ca) and plain HTTP, both
// recording the x-api-key header of every request by host.
func k8sVaultServers(t *testing.T) (up *upstreamTLS, addr, caFile string, tlsPort, plainPort int) {
	t.Helper()
	addr = k8sOutsideAddr(t)
	upCA, caFile := upstreamCA(t)
	up = &upstreamTLS{seen: map[string][]string{}}
	tlsLn, err := net.Listen("tcp4", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	tlsSrv := &http.Server{Handler: up, ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{
		GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) { return upCA.Leaf(h.ServerName) }}}
	go func() { _ = tlsSrv.ServeTLS(tlsLn, "", "") }()
	t.Cleanup(func() { _ = tlsSrv.Close() })
	plainLn, err := net.Listen("tcp4", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	plainSrv := &http.Server{Handler: up, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = plainSrv.Serve(plainLn) }()
	t.Cleanup(func() { _ = plainSrv.Close() })
	return up, addr, caFile, tlsLn.Addr().(*net.TCPAddr).Port, plainLn.Addr().(*net.TCPAddr).Port
}

// k8sOutsideAddr is an address of the host on the Pods' bridge that the
// proxy Pod's NetworkPolicy lets it reach: a public one when the bridge
// has one (on a cluster that enforces NetworkPolicy, the proxy may not
// reach private ranges), else podReachableAddr.
func k8sOutsideAddr(t *testing.T) string {
	t.Helper()
	if ifc, err := net.InterfaceByName(k8sPodBridge); err == nil {
		if addrs, err := ifc.Addrs(); err == nil {
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsPrivate() && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
					return n.IP.String()
				}
			}
		}
	}
	return podReachableAddr(t)
}

// k8sVaultConfig is an allowlist configuration with one secret, e2e-api,
// read from PODBOT_E2E_VAULT_KEY and sent as x-api-key to vault.test on
// tlsPort only; other.test is allowed on both ports.
func k8sVaultConfig(addr, caFile string, tlsPort, plainPort int) string {
	return fmt.Sprintf(`[network]
mode = "allowlist"
presets = []
allow = ["vault.test:%[3]d", "other.test:%[3]d", "other.test:%[4]d"]
resolve = ["vault.test=%[1]s", "other.test=%[1]s"]
upstream_ca = %[2]q

[[secrets]]
name = "e2e-api"
source = "env:PODBOT_E2E_VAULT_KEY"
hosts = ["vault.test:%[3]d"]
header = "x-api-key: {}"
env = "VAULT_KEY"
`, addr, caFile, tlsPort, plainPort)
}

// vaultSecretsLeft fails the test when the namespace still holds a vault
// Secret of podbot's.
func (c k8sTestCluster) vaultSecretsLeft(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	l, err := c.client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: egressnet.LabelRole})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range l.Items {
		t.Errorf("vault Secret %s left behind", s.Name)
	}
}

// TestK8sVaultSecretSwappedOnlyForItsHost is TestVaultSecretSwappedOnlyForItsHost
// on the cluster, through podbot create: the sandbox Pod's VAULT_KEY holds
// a placeholder; sent to the secret's host over HTTPS (intercepted by the
// proxy Pod with the sandbox CA, which the sandbox trusts through
// /etc/podbot) the outside server receives the real value; sent to
// another allowed host over plain HTTP it is refused with 403 and the
// decision log names the secret; over HTTPS to that host only the useless
// placeholder travels. The vault Secret exists, immutable, owned by the
// sandbox Pod and mounted by the proxy Pod alone; the real value is in no
// Pod spec, no ConfigMap, no process's environ or cmdline and no file of
// the sandbox Pod (searched as root); root in the sandbox cannot change
// /etc/podbot; podbot network show names the secret, never its value or
// placeholder; podbot rm -f leaves no Secret.
func TestK8sVaultSecretSwappedOnlyForItsHost(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	up, addr, caFile, tlsPort, plainPort := k8sVaultServers(t)
	real := "sk-k8s-vault-e2e-" + suite.runID + "-REALVALUE"
	pb := c.podbot(ns)
	// As root, so that the in-Pod search (pods/exec runs as the Pod's
	// user) sees every file.
	pb.config = "[sandbox]\nuser = \"root\"\n" + k8sVaultConfig(addr, caFile, tlsPort, plainPort)
	pb.env = []string{"PODBOT_NETWORK_MODE=allowlist", "PODBOT_SIDECAR_PATH=" + sidecarBin(t), "PODBOT_E2E_VAULT_KEY=" + real}

	r := pb.run(t, ctx, nil, "create", "--", "sleep", "3600")
	if r.Code != 0 {
		t.Fatalf("create: exit %d: %s", r.Code, r.Stderr)
	}
	if strings.Contains(r.Stdout+r.Stderr, real) {
		t.Fatal("podbot create printed the real value")
	}
	name := strings.TrimSpace(r.Stdout)
	proxyName := kube.EgressName(name)
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		pb.run(t, cctx, nil, "rm", "-f", name)
	})

	// Through the proxy: the secret's host gets the real value, another
	// host is refused the placeholder over HTTP and gets it unchanged over
	// HTTPS (not intercepted: the sandbox does not trust its test CA).
	vaultURL := fmt.Sprintf("https://vault.test:%d/", tlsPort)
	otherTLS := fmt.Sprintf("https://other.test:%d/", tlsPort)
	otherPlain := fmt.Sprintf("http://other.test:%d/", plainPort)
	r = pb.run(t, ctx, nil, "exec", name, "--", "python3", "-c", vaultFetchScript, vaultURL, otherPlain, "noverify:"+otherTLS)
	t.Logf("through the proxy:\n%s", r.Stdout)
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if r.Code != 0 || len(lines) != 3 || !strings.Contains(lines[0], " 200 outside vault.test") {
		t.Fatalf("the secret's host over HTTPS through the vault: want 200, got exit %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if !strings.Contains(lines[1], " refused 403") || !strings.Contains(lines[2], " 200 outside other.test") {
		t.Fatalf("the placeholder to another host: want 403 over HTTP, passed through untouched over HTTPS; got:\n%s", r.Stdout)
	}
	r = pb.run(t, ctx, nil, "exec", name, "--", "printenv", "VAULT_KEY")
	placeholder := strings.TrimSpace(r.Stdout)
	if !strings.HasPrefix(placeholder, egress.PlaceholderPrefix+"e2e-api-") {
		t.Fatalf("VAULT_KEY in the sandbox is %q, want a placeholder", placeholder)
	}
	seen := up.keys()
	vaultHost := fmt.Sprintf("vault.test:%d", tlsPort)
	if len(seen[vaultHost]) != 1 || seen[vaultHost][0] != real {
		t.Fatalf("the secret's host did not receive the real value once: %d requests", len(seen[vaultHost]))
	}
	if vs := seen[fmt.Sprintf("other.test:%d", plainPort)]; len(vs) != 0 {
		t.Fatal("the refused plain request reached the outside server")
	}
	if vs := seen[fmt.Sprintf("other.test:%d", tlsPort)]; len(vs) != 1 || vs[0] != placeholder {
		t.Fatalf("other.test over HTTPS got %d requests, want one with the useless placeholder", len(vs))
	}

	// The refusal is in the decision log, naming the secret.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := pb.run(t, ctx, nil, "network", "log", "--json", name)
		if r.Code == 0 && strings.Contains(r.Stdout, `"host":"other.test"`) && strings.Contains(r.Stdout, "placeholder of secret e2e-api") {
			if strings.Contains(r.Stdout, real) {
				t.Fatal("the decision log holds the real value")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the decision log lacks the placeholder refusal: %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// network show names the secret, its hosts and variable, nothing more.
	show := pb.run(t, ctx, nil, "network", "show", "--json", name)
	var np podbot.NetworkPolicy
	if show.Code != 0 || json.Unmarshal([]byte(show.Stdout), &np) != nil {
		t.Fatalf("network show: %d\n%s\n%s", show.Code, show.Stdout, show.Stderr)
	}
	if len(np.Secrets) != 1 || np.Secrets[0].Name != "e2e-api" || np.Secrets[0].Env != "VAULT_KEY" ||
		len(np.Secrets[0].Hosts) != 1 || np.Secrets[0].Hosts[0] != vaultHost ||
		strings.Contains(show.Stdout, placeholder) || strings.Contains(show.Stdout, real) {
		t.Fatalf("network show secrets %+v\n%s", np.Secrets, show.Stdout)
	}

	// The objects: the vault Secret, owned by the sandbox Pod and mounted
	// by the proxy Pod alone; no value in any Pod spec or ConfigMap.
	sb, err := c.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := c.client.CoreV1().Secrets(ns).Get(ctx, proxyName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("vault Secret: %v", err)
	}
	if vs.Immutable == nil || !*vs.Immutable || vs.Labels[egressnet.LabelSandbox] != name || vs.Labels[egressnet.LabelRole] != egressnet.RoleProxy ||
		len(vs.OwnerReferences) != 1 || vs.OwnerReferences[0].UID != sb.UID {
		t.Errorf("vault Secret immutable %v labels %v owners %+v", vs.Immutable, vs.Labels, vs.OwnerReferences)
	}
	if !strings.Contains(string(vs.Data[egressnet.SecretsFile]), real) || !strings.Contains(string(vs.Data[egressnet.CAKeyFile]), "PRIVATE KEY") {
		t.Error("the vault Secret does not hold the value and the CA key")
	}
	pods, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		body, _ := json.Marshal(p)
		if strings.Contains(string(body), real) || strings.Contains(string(body), hex.EncodeToString([]byte(real))) {
			t.Errorf("Pod %s holds the real value", p.Name)
		}
		for _, v := range p.Spec.Volumes {
			if v.Secret != nil && v.Secret.SecretName == proxyName && p.Name != proxyName {
				t.Errorf("Pod %s mounts the vault Secret", p.Name)
			}
		}
	}
	cms, err := c.client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		body, _ := json.Marshal(cm)
		if strings.Contains(string(body), real) || strings.Contains(string(body), "PRIVATE KEY") {
			t.Errorf("ConfigMap %s holds the real value or a private key", cm.Name)
		}
	}

	// Inside the sandbox Pod, as root: no process and no file holds it.
	r = pb.run(t, ctx, nil, "exec", name, "--", "python3", "-c", vaultSearchScript, hex.EncodeToString([]byte(real)))
	if r.Code != 0 || strings.Contains(r.Stdout, "HIT") || !strings.Contains(r.Stdout, "searched") {
		t.Fatalf("the real value is in the sandbox Pod (exit %d):\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	t.Logf("in-Pod search: %s", lastLine(r.Stdout))
	r = pb.run(t, ctx, nil, "exec", name, "--", "sh", "-c",
		"id -u; grep -c 'BEGIN CERTIFICATE' /etc/podbot/ca-bundle.pem; grep -l 'PRIVATE KEY' -r /etc/podbot || true; "+
			"for f in /etc/podbot/ca-bundle.pem /etc/podbot/egress-ca.pem /etc/podbot/new.pem; do "+
			"if (echo evil >> $f) 2>/dev/null; then echo WROTE $f; fi; done; "+
			"mv /etc/podbot/ca-bundle.pem /etc/podbot/x 2>/dev/null && echo MOVED; "+
			"rm -f /etc/podbot/egress-ca.pem 2>/dev/null; test -e /etc/podbot/egress-ca.pem || echo REMOVED; "+
			"chmod 666 /etc/podbot/ca-bundle.pem 2>/dev/null && echo CHMOD; "+
			"mount -o remount,rw /etc/podbot 2>/dev/null && echo REMOUNTED; true")
	t.Logf("/etc/podbot as root:\n%s", r.Stdout)
	out := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if r.Code != 0 || len(out) != 2 || out[0] != "0" || out[1] == "0" || out[1] == "1" {
		t.Fatalf("want uid 0, a bundle of the image's certificates plus the CA, no key, no change; got exit %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}

	if r := pb.run(t, ctx, nil, "rm", "-f", name); r.Code != 0 {
		t.Fatalf("rm: exit %d: %s", r.Code, r.Stderr)
	}
	c.waitGone(t, ctx, ns)
	c.nothingLeft(t, ctx, ns)
	c.egressObjectsLeft(t, ctx, ns)
	c.vaultSecretsLeft(t, ctx, ns)
}

// TestK8sVaultInterruptLeavesNothing: Ctrl-C while a vault sandbox's proxy
// Pod cannot be scheduled ends podbot create with 130 and deletes the
// vault Secret with the proxy's other objects.
func TestK8sVaultInterruptLeavesNothing(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	_, addr, caFile, tlsPort, plainPort := k8sVaultServers(t)
	pb := c.podbot(ns)
	pb.config = k8sVaultConfig(addr, caFile, tlsPort, plainPort) + "[kubernetes]\nnode_selector = { \"podbot.e2e/no-such-node\" = \"x\" }\n"
	pb.env = []string{"PODBOT_NETWORK_MODE=allowlist", "PODBOT_SIDECAR_PATH=" + sidecarBin(t), "PODBOT_E2E_VAULT_KEY=sk-interrupted"}
	c.interruptOncePodAppears(t, ctx, ns, pb.cmd(t, ctx, "create", "--", "sleep", "3600"),
		egressnet.LabelRole+"="+egressnet.RoleProxy, "proxy Pod")
	c.waitGone(t, ctx, ns)
	c.nothingLeft(t, ctx, ns)
	c.egressObjectsLeft(t, ctx, ns)
	c.vaultSecretsLeft(t, ctx, ns)
}

// TestK8sVaultRun: podbot run --rm with a vault on the cluster: the agent,
// in its Pod, sends its placeholder to the secret's host (the outside
// server receives the real value) and to another host over HTTP (403); an
// allowlisted variable holding the real value is not passed; when the
// agent exits nothing is left, the vault Secret included.
func TestK8sVaultRun(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	up, addr, caFile, tlsPort, plainPort := k8sVaultServers(t)
	real := "sk-k8s-vault-run-" + suite.runID + "-REALVALUE"
	pb := c.podbot(ns)
	script := fmt.Sprintf(`echo "stub=${STUB_ALLOWED:-unset}"; python3 -c '%s' https://vault.test:%d/ http://other.test:%d/`, vaultFetchScript, tlsPort, plainPort)
	pb.config = k8sRunConfig(script) + k8sVaultConfig(addr, caFile, tlsPort, plainPort)
	pb.env = []string{"HOME=" + k8sHome(t, "{}"), "STUB_ALLOWED=" + real, "PODBOT_E2E_VAULT_KEY=" + real,
		"PODBOT_NETWORK_MODE=allowlist", "PODBOT_SIDECAR_PATH=" + sidecarBin(t)}
	r := pb.run(t, ctx, nil, "run", "--rm")
	t.Logf("the agent through its vault:\n%s", r.Stdout)
	if r.Code != 0 || !strings.Contains(r.Stdout, " 200 outside vault.test") || !strings.Contains(r.Stdout, " refused 403") ||
		!strings.Contains(r.Stdout, "stub=unset") {
		t.Fatalf("want the secret's host reached, the other refused (403), STUB_ALLOWED not passed; exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stdout+r.Stderr, real) {
		t.Fatal("podbot run's output holds the real value")
	}
	if vs := up.keys()[fmt.Sprintf("vault.test:%d", tlsPort)]; len(vs) != 1 || vs[0] != real {
		t.Fatalf("the secret's host did not receive the real value once: %d requests", len(vs))
	}
	c.waitGone(t, ctx, ns)
	c.nothingLeft(t, ctx, ns)
	c.egressObjectsLeft(t, ctx, ns)
	c.noSecrets(t, ctx, ns)
}
