//go:build e2e && kubernetes

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/kube"
)

// TestK8sToolsEgressAllowlist: a tool session on the cluster with
// tools.network = "allowlist" gets an egress proxy Pod of its own (owned by
// the tool Pod, its ConfigMap holding network.allow's rules), a
// NetworkPolicy whose only egress is that proxy, and HTTP(S)_PROXY in the
// shell tool's environment; from shell_execute an allowed host answers over
// HTTP and HTTPS (CONNECT) through the proxy and a host not on the list is
// refused (403); Close leaves no Pod, NetworkPolicy or ConfigMap.
//
// The test cluster's bridge CNI does not enforce NetworkPolicy, so this
// does not prove that the shell cannot go around the proxy: the policy is
// checked as an object.
func TestK8sToolsEgressAllowlist(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	addr, port, tlsPort := k8sEgressServers(t)

	kc, err := kube.Connect(kube.Options{Kubeconfig: os.Getenv("PODBOT_E2E_KUBECONFIG"), Namespace: ns, ImagePullPolicy: "Never"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Tools.Image = c.image
	cfg.Tools.Network = podbot.ToolsNetworkAllowlist
	cfg.Network.Presets = nil
	cfg.Network.Allow = []string{fmt.Sprintf("allowed.test:%d", port), fmt.Sprintf("allowed.test:%d", tlsPort)}
	cfg.Network.Resolve = []string{"allowed.test=" + addr, "denied.test=" + addr}
	s, err := podbot.NewKubeToolSession(ctx, kc, podbot.ToolSessionOptions{Config: cfg, SidecarPath: filepath.Join(suite.bin, "podbot-sidecar")})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer ccancel()
			_ = s.Close(cctx)
		}
	})

	allowed := fmt.Sprintf("http://allowed.test:%d/", port)
	allowedTLS := fmt.Sprintf("https://allowed.test:%d/", tlsPort)
	denied := fmt.Sprintf("http://denied.test:%d/", port)
	res, err := shellCall(ctx, s, 60, "python3", "-c", fetchScript, allowed, allowedTLS, denied)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if res.ExitCode != 0 || len(lines) != 3 || !strings.Contains(lines[0], " 200 outside allowed.test") ||
		!strings.Contains(lines[1], " 200 outside allowed.test") || !strings.Contains(lines[2], " refused") || !strings.Contains(lines[2], "403") {
		t.Fatalf("want allowed.test over HTTP and HTTPS, denied.test refused with 403; got %+v", res)
	}
	env, err := shellCall(ctx, s, 0, "sh", "-c", `echo "$HTTPS_PROXY"; cat /etc/resolv.conf`)
	if err != nil {
		t.Fatal(err)
	}

	name := s.Info().ContainerName
	proxyName := kube.EgressName(name)
	tool, err := c.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := c.client.CoreV1().Pods(ns).Get(ctx, proxyName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("proxy Pod: %v", err)
	}
	if want := "http://" + proxy.Status.PodIP + ":3128"; !strings.HasPrefix(env.Stdout, want+"\n") || !strings.Contains(env.Stdout, "nameserver 127.0.0.1") {
		t.Errorf("the shell's HTTPS_PROXY and resolver: %q; want %s and no resolver", env.Stdout, want)
	}
	if refs := proxy.OwnerReferences; len(refs) != 1 || refs[0].UID != tool.UID || proxy.Labels[egressnet.LabelSandbox] != name {
		t.Errorf("proxy owners %+v labels %v; want the tool Pod %s", refs, proxy.Labels, name)
	}
	cm, err := c.client.CoreV1().ConfigMaps(ns).Get(ctx, proxyName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pol := cm.Data[egressnet.PolicyFile]; !strings.Contains(pol, `"host": "allowed.test"`) || strings.Contains(pol, `"host": "denied.test"`) {
		t.Errorf("proxy policy %s", pol)
	}
	np, err := c.client.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(np.Spec.Ingress) != 0 || len(np.Spec.Egress) != 1 || len(np.Spec.Egress[0].To) != 1 || np.Spec.Egress[0].To[0].PodSelector == nil ||
		np.Spec.Egress[0].To[0].PodSelector.MatchLabels[egressnet.LabelSandbox] != name ||
		len(np.Spec.PolicyTypes) != 2 || np.Spec.PolicyTypes[1] != networkingv1.PolicyTypeEgress {
		t.Errorf("tool Pod's NetworkPolicy: %+v; want egress to its proxy alone", np.Spec)
	}

	closed = true
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, ctx, ns)
	c.nothingLeft(t, ctx, ns)
	c.egressObjectsLeft(t, ctx, ns)
}
