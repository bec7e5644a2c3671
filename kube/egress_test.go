package kube

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// allowlistPlan is an allowlist sandbox's plan allowing one host.
func allowlistPlan(t *testing.T) launchplan.Plan {
	t.Helper()
	r, err := egress.ParseRule("example.com:443")
	if err != nil {
		t.Fatal(err)
	}
	return testPlan(t, func(req *launchplan.Request) {
		req.Name = "podbot-0123456789ab"
		req.Egress = launchplan.Egress{Mode: egress.ModeAllowlist, Policy: egress.Policy{Rules: []egress.Rule{r}}}
	})
}

func TestEgressName(t *testing.T) {
	if got := EgressName("podbot-abc"); got != "egress-podbot-abc" {
		t.Errorf("short name: %q", got)
	}
	long := strings.Repeat("a", 60)
	a, b := EgressName(long), EgressName(long[:59]+"b")
	if len(a) > 63 || len(validation.IsDNS1123Label(a)) > 0 || a == b {
		t.Errorf("long names %q and %q: want distinct DNS labels of at most 63 characters", a, b)
	}
}

func TestBuildEgressConfigMap(t *testing.T) {
	plan := allowlistPlan(t)
	cm, err := BuildEgressConfigMap(plan.Name, &plan.Egress.Policy, []byte("PEM"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Name != "egress-"+plan.Name || cm.Labels[egressnet.LabelSandbox] != plan.Name || cm.Labels[egressnet.LabelRole] != egressnet.RoleProxy {
		t.Errorf("meta %+v", cm.ObjectMeta)
	}
	if _, ok := cm.Labels[launchplan.LabelManaged]; ok {
		t.Errorf("the proxy's objects must not look like a sandbox: %v", cm.Labels)
	}
	pol, err := egress.ParsePolicy([]byte(cm.Data[egressnet.PolicyFile]))
	if err != nil {
		t.Fatalf("the ConfigMap's policy does not parse as the proxy reads it: %v", err)
	}
	if d := pol.Decide("example.com", 443); !d.Allowed {
		t.Errorf("example.com:443 refused by the shipped policy: %+v", d)
	}
	if d := pol.Decide("evil.example", 443); d.Allowed {
		t.Errorf("evil.example allowed by the shipped policy")
	}
	if cm.Data["upstream.pem"] != "PEM" {
		t.Errorf("upstream CA %q", cm.Data["upstream.pem"])
	}
	if cm, _ := BuildEgressConfigMap(plan.Name, &plan.Egress.Policy, nil, nil); len(cm.Data) != 1 {
		t.Errorf("no CA: keys %v", cm.Data)
	}
}

func TestBuildEgressPod(t *testing.T) {
	plan := allowlistPlan(t)
	pod, err := BuildEgressPod(plan.Name, plan.Image, true, false, Options{ImagePullPolicy: "Never", RuntimeClass: "gvisor"})
	if err != nil {
		t.Fatal(err)
	}
	s := pod.Spec
	if pod.Name != EgressName(plan.Name) || pod.Labels[egressnet.LabelSandbox] != plan.Name || pod.Labels[egressnet.LabelRole] != egressnet.RoleProxy ||
		pod.Labels[launchplan.LabelManaged] != "" || pod.Labels[launchplan.LabelSession] != "" {
		t.Errorf("labels %v: want the proxy's, and none a sandbox's policy or ps selects", pod.Labels)
	}
	if s.RestartPolicy != corev1.RestartPolicyAlways || *s.AutomountServiceAccountToken || *s.EnableServiceLinks || s.HostNetwork ||
		*s.RuntimeClassName != "gvisor" {
		t.Errorf("pod spec %+v", s)
	}
	if *s.SecurityContext.RunAsUser != egressnet.ProxyUser || !*s.SecurityContext.RunAsNonRoot ||
		s.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security %+v", s.SecurityContext)
	}
	if len(s.Containers) != 1 || len(s.InitContainers) != 1 || s.InitContainers[0].Name != InstallContainerName {
		t.Fatalf("containers %d, init %d", len(s.Containers), len(s.InitContainers))
	}
	c := s.Containers[0]
	sc := c.SecurityContext
	if *sc.Privileged || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		len(sc.Capabilities.Add) != 0 {
		t.Errorf("container security %+v", sc)
	}
	if c.Image != plan.Image || c.ImagePullPolicy != "Never" {
		t.Errorf("image %q %q", c.Image, c.ImagePullPolicy)
	}
	want := []string{SidecarPath, "egress", "--listen", "0.0.0.0:3128", "--policy", "/etc/podbot-egress/policy.json",
		"--log", "/var/log/podbot-egress/decisions.jsonl", "--upstream-ca", "/etc/podbot-egress/upstream.pem"}
	if !slices.Equal(c.Command, want) {
		t.Errorf("command %q, want %q", c.Command, want)
	}
	if c.Resources.Limits.Memory().Value() != egressMemory || c.Resources.Limits.Cpu().MilliValue() != 500 {
		t.Errorf("limits %v", c.Resources.Limits)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	if m := mounts[egressnet.PolicyDirTarget]; m.Name != egressPolicyVolume || !m.ReadOnly {
		t.Errorf("policy mount %+v", m)
	}
	if m := mounts[SidecarDir]; !m.ReadOnly {
		t.Errorf("sidecar mount %+v", m)
	}
	if _, ok := mounts[egressnet.LogDirTarget]; !ok || len(mounts) != 4 {
		t.Errorf("mounts %v: want the sidecar, the policy, the log and /tmp only", mounts)
	}
	for _, v := range s.Volumes {
		if v.Name == egressPolicyVolume && (v.ConfigMap == nil || v.ConfigMap.Name != pod.Name) {
			t.Errorf("policy volume %+v", v)
		}
		if v.HostPath != nil || v.Name == workspaceVolume {
			t.Errorf("volume %+v", v)
		}
	}
}

func TestBuildEgressNetworkPolicy(t *testing.T) {
	np := BuildEgressNetworkPolicy("podbot-x", "0123456789abcdef")
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
		t.Errorf("types %v", np.Spec.PolicyTypes)
	}
	if sel := np.Spec.PodSelector.MatchLabels; sel[egressnet.LabelSandbox] != "podbot-x" || sel[egressnet.LabelRole] != egressnet.RoleProxy || len(sel) != 2 {
		t.Errorf("selector %v", sel)
	}
	in := np.Spec.Ingress
	if len(in) != 1 || len(in[0].From) != 1 || in[0].From[0].PodSelector == nil || in[0].From[0].NamespaceSelector != nil || in[0].From[0].IPBlock != nil {
		t.Fatalf("ingress %+v: want one rule from one Pod selector", in)
	}
	if sel := in[0].From[0].PodSelector.MatchLabels; sel[launchplan.LabelSession] != "0123456789abcdef" || sel[launchplan.LabelManaged] != "true" {
		t.Errorf("ingress from %v: want the sandbox's session", sel)
	}
	if p := in[0].Ports; len(p) != 1 || *p[0].Protocol != corev1.ProtocolTCP || p[0].Port.IntValue() != 3128 {
		t.Errorf("ingress ports %+v", p)
	}
	eg := np.Spec.Egress
	if len(eg) != 2 || len(eg[0].Ports) != 0 || len(eg[0].To) != 2 {
		t.Fatalf("egress %+v", eg)
	}
	v4 := eg[0].To[0].IPBlock
	if v4 == nil || v4.CIDR != "0.0.0.0/0" {
		t.Fatalf("v4 block %+v", v4)
	}
	for _, cidr := range []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "127.0.0.0/8", "100.64.0.0/10"} {
		if !slices.Contains(v4.Except, cidr) {
			t.Errorf("%s is not excepted: %v", cidr, v4.Except)
		}
	}
	if v6 := eg[0].To[1].IPBlock; v6 == nil || v6.CIDR != "::/0" || !slices.Contains(v6.Except, "fc00::/7") || !slices.Contains(v6.Except, "fe80::/10") {
		t.Errorf("v6 block %+v", v6)
	}
	dns := eg[1]
	if len(dns.To) != 1 || dns.To[0].PodSelector.MatchLabels["k8s-app"] != "kube-dns" ||
		dns.To[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "kube-system" || len(dns.Ports) != 2 {
		t.Errorf("dns rule %+v", dns)
	}
	for _, p := range dns.Ports {
		if p.Port.IntValue() != 53 {
			t.Errorf("dns port %+v", p)
		}
	}
}

func TestSandboxNetworkPolicyAllowlist(t *testing.T) {
	plan := allowlistPlan(t)
	pod, err := BuildPod(plan, Options{})
	if err != nil {
		t.Fatal(err)
	}
	np := BuildNetworkPolicy(pod, egress.ModeAllowlist)
	if len(np.Spec.Ingress) != 0 || len(np.Spec.Egress) != 1 {
		t.Fatalf("ingress %v egress %v: want no ingress, one egress rule", np.Spec.Ingress, np.Spec.Egress)
	}
	r := np.Spec.Egress[0]
	if len(r.To) != 1 || r.To[0].IPBlock != nil || r.To[0].NamespaceSelector != nil {
		t.Fatalf("egress to %+v: want the proxy Pod alone", r.To)
	}
	if sel := r.To[0].PodSelector.MatchLabels; sel[egressnet.LabelSandbox] != plan.Name || sel[egressnet.LabelRole] != egressnet.RoleProxy {
		t.Errorf("egress to %v", sel)
	}
	if len(r.Ports) != 1 || *r.Ports[0].Protocol != corev1.ProtocolTCP || r.Ports[0].Port.IntValue() != egressnet.ProxyPort {
		t.Errorf("ports %+v: want TCP %d only (no DNS)", r.Ports, egressnet.ProxyPort)
	}
}

func TestWithEgressProxy(t *testing.T) {
	pod, err := BuildPod(allowlistPlan(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	withEgressProxy(pod, "10.244.0.9")
	env := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		if e.ValueFrom != nil {
			t.Errorf("%s comes from a reference", e.Name)
		}
		env[e.Name] = e.Value
	}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		if env[k] != "http://10.244.0.9:3128" {
			t.Errorf("%s=%q", k, env[k])
		}
	}
	if pod.Spec.DNSPolicy != corev1.DNSNone || !slices.Equal(pod.Spec.DNSConfig.Nameservers, []string{"127.0.0.1"}) {
		t.Errorf("dns %v %+v: want no usable resolver", pod.Spec.DNSPolicy, pod.Spec.DNSConfig)
	}
}

// assertNoEgress fails when any egress object is left.
func assertNoEgress(t *testing.T, cs *fake.Clientset) {
	t.Helper()
	cms, _ := cs.CoreV1().ConfigMaps("sb").List(context.Background(), metav1.ListOptions{})
	if len(cms.Items) != 0 {
		t.Errorf("left behind: %d config maps", len(cms.Items))
	}
	assertNothingLeft(t, cs)
}

func TestCreateAllowlistFailuresLeaveNothing(t *testing.T) {
	plan := allowlistPlan(t)
	t.Run("no sidecar", func(t *testing.T) {
		cs := fake.NewClientset()
		_, err := NewForClientset(cs, "sb", Options{}).Create(context.Background(), plan)
		if !errors.Is(err, errdefs.ErrMissingRequired) {
			t.Fatalf("err %v, want ErrMissingRequired", err)
		}
		assertNoEgress(t, cs)
	})
	t.Run("upstream CA unreadable", func(t *testing.T) {
		cs := fake.NewClientset()
		p := plan
		p.Egress.UpstreamCA = filepath.Join(t.TempDir(), "missing.pem")
		_, err := NewForClientset(cs, "sb", Options{}).WithSidecar(&Sidecar{data: []byte("x")}).Create(context.Background(), p)
		var fe *errdefs.FilesystemError
		if !errors.As(err, &fe) {
			t.Fatalf("err %v, want a filesystem error", err)
		}
		assertNoEgress(t, cs)
	})
	t.Run("upstream CA too large", func(t *testing.T) {
		big := filepath.Join(t.TempDir(), "big.pem")
		if err := os.WriteFile(big, make([]byte, MaxUpstreamCABytes+1), 0o600); err != nil {
			t.Fatal(err)
		}
		cs := fake.NewClientset()
		p := plan
		p.Egress.UpstreamCA = big
		if _, err := NewForClientset(cs, "sb", Options{}).WithSidecar(&Sidecar{data: []byte("x")}).Create(context.Background(), p); !errors.Is(err, errdefs.ErrRefused) {
			t.Fatalf("err %v, want ErrRefused", err)
		}
		assertNoEgress(t, cs)
	})
	for _, tc := range []struct {
		name   string
		state  corev1.ContainerState
		reason error
	}{
		{"proxy image cannot be pulled", corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}}, errdefs.ErrUnavailable},
		{"proxy never starts", corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}, errdefs.ErrTimeout},
		// The fake clientset has no REST config: the exec carrying the
		// sidecar into the proxy fails, as any exec failure would.
		{"sidecar cannot be streamed into the proxy", corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, errdefs.ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset()
			initReactor(cs, tc.state)
			c := NewForClientset(cs, "sb", Options{StartTimeout: 300 * time.Millisecond}).WithSidecar(&Sidecar{data: []byte("x")})
			_, err := c.Create(context.Background(), plan)
			if !errors.Is(err, tc.reason) {
				t.Errorf("err %v, want %v", err, tc.reason)
			}
			assertNoEgress(t, cs)
		})
	}
}

// seedEgress creates sandbox's egress objects as startEgress would, with
// labels for sandbox owner (a different value makes them someone else's).
func seedEgress(t *testing.T, cs *fake.Clientset, sandbox, owner string) {
	t.Helper()
	ctx := context.Background()
	meta := metav1.ObjectMeta{Name: EgressName(sandbox), Labels: egressLabels(owner)}
	if _, err := cs.CoreV1().Pods("sb").Create(ctx, &corev1.Pod{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("sb").Create(ctx, &corev1.ConfigMap{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.NetworkingV1().NetworkPolicies("sb").Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestOwnAndDeleteEgress(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	c := NewForClientset(cs, "sb", Options{})
	seedEgress(t, cs, "podbot-a", "podbot-a")
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "podbot-a", UID: "uid-a"}
	if err := c.ownEgress(ctx, "podbot-a", owner, false); err != nil {
		t.Fatal(err)
	}
	name := EgressName("podbot-a")
	p, _ := cs.CoreV1().Pods("sb").Get(ctx, name, metav1.GetOptions{})
	m, _ := cs.CoreV1().ConfigMaps("sb").Get(ctx, name, metav1.GetOptions{})
	np, _ := cs.NetworkingV1().NetworkPolicies("sb").Get(ctx, name, metav1.GetOptions{})
	for what, refs := range map[string][]metav1.OwnerReference{"pod": p.OwnerReferences, "config map": m.OwnerReferences, "policy": np.OwnerReferences} {
		if len(refs) != 1 || refs[0].UID != "uid-a" || refs[0].Kind != "Pod" {
			t.Errorf("%s owners %+v", what, refs)
		}
	}
	// Objects of the same name that are not this sandbox's proxy stay.
	seedEgress(t, cs, "podbot-b", "someone-else")
	if err := c.deleteEgress(ctx, "podbot-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("sb").Get(ctx, EgressName("podbot-b"), metav1.GetOptions{}); err != nil {
		t.Errorf("a foreign config map was deleted: %v", err)
	}
	if err := c.Delete(ctx, "podbot-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("sb").Get(ctx, name, metav1.GetOptions{}); err == nil {
		t.Error("Delete left the proxy's config map")
	}
	if _, err := cs.CoreV1().Pods("sb").Get(ctx, name, metav1.GetOptions{}); err == nil {
		t.Error("Delete left the proxy Pod")
	}
	if err := c.deleteEgress(ctx, "podbot-missing"); err != nil {
		t.Errorf("missing objects: %v", err)
	}
}

func TestRemoveDeletesEgress(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	c := NewForClientset(cs, "sb", Options{})
	plan := allowlistPlan(t)
	pod, err := BuildPod(plan, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("sb").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	seedEgress(t, cs, plan.Name, plan.Name)
	if _, err := c.Remove(ctx, plan.Name, RemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	assertNoEgress(t, cs)
}
