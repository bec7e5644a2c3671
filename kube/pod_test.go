package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// testPlan is the plan podbot create builds, normalized.
func testPlan(t *testing.T, mut func(*launchplan.Request)) launchplan.Plan {
	t.Helper()
	ro := true
	req := launchplan.Request{
		Intent:    launchplan.IntentInteractive,
		Image:     "localhost/podbot-sandbox:latest",
		SessionID: "0123456789abcdef",
		Version:   "1.2.3",
		Sandbox: launchplan.Sandbox{
			MemoryBytes: 512 << 20, NanoCPUs: 1_500_000_000, PidsLimit: 100, ReadOnlyRootfs: &ro,
		},
		Egress: launchplan.Egress{Mode: egress.ModeNone},
	}
	if mut != nil {
		mut(&req)
	}
	p, err := launchplan.Normalize(req)
	if err != nil {
		t.Fatalf("Normalize: %v", err)
	}
	return p
}

func TestBuildPodHardening(t *testing.T) {
	plan := testPlan(t, nil)
	pod, err := BuildPod(plan, Options{RuntimeClass: "gvisor", NodeSelector: map[string]string{"pool": "agents"},
		ImagePullPolicy: "Never", ServiceAccount: "sandboxes"})
	if err != nil {
		t.Fatal(err)
	}
	s := pod.Spec
	if pod.Name != plan.Name || pod.Labels[launchplan.LabelManaged] != "true" || pod.Labels[launchplan.LabelSession] != "0123456789abcdef" ||
		pod.Labels[launchplan.LabelIntent] != "interactive" || pod.Annotations[launchplan.LabelVersion] != "1.2.3" {
		t.Errorf("name %q labels %v annotations %v", pod.Name, pod.Labels, pod.Annotations)
	}
	if s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken is not false")
	}
	if s.EnableServiceLinks == nil || *s.EnableServiceLinks {
		t.Error("enableServiceLinks is not false")
	}
	if s.HostNetwork || s.HostPID || s.HostIPC || (s.ShareProcessNamespace != nil && *s.ShareProcessNamespace) {
		t.Error("a host namespace or shared process namespace is set")
	}
	for _, v := range s.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath", v.Name)
		}
	}
	if s.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %s", s.RestartPolicy)
	}
	if s.RuntimeClassName == nil || *s.RuntimeClassName != "gvisor" || s.NodeSelector["pool"] != "agents" || s.ServiceAccountName != "sandboxes" {
		t.Errorf("runtimeClass %v nodeSelector %v serviceAccount %q", s.RuntimeClassName, s.NodeSelector, s.ServiceAccountName)
	}
	psc := s.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != DefaultUID ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v", psc)
	}
	if len(s.Containers) != 1 || len(s.InitContainers) != 0 || len(s.EphemeralContainers) != 0 {
		t.Fatalf("containers %d init %d", len(s.Containers), len(s.InitContainers))
	}
	c := s.Containers[0]
	if c.Name != ContainerName || c.Image != plan.Image || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("container %s image %s pull %s", c.Name, c.Image, c.ImagePullPolicy)
	}
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Privileged == nil || *sc.Privileged ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("container security context %+v", sc)
	}
	if sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("capabilities %+v: want drop ALL", sc.Capabilities)
	}
	if len(sc.Capabilities.Add) != len(plan.Security.CapAdd) {
		t.Errorf("added caps %v, want the plan's %v", sc.Capabilities.Add, plan.Security.CapAdd)
	}
	for i, a := range sc.Capabilities.Add {
		if string(a) != plan.Security.CapAdd[i] {
			t.Errorf("cap %d = %s, want %s", i, a, plan.Security.CapAdd[i])
		}
	}
	if q := c.Resources.Limits[corev1.ResourceMemory]; q.Value() != 512<<20 {
		t.Errorf("memory limit %s", q.String())
	}
	if q := c.Resources.Limits[corev1.ResourceCPU]; q.MilliValue() != 1500 {
		t.Errorf("cpu limit %s", q.String())
	}
	if q := c.Resources.Requests[corev1.ResourceCPU]; q.Cmp(requestCPU) != 0 {
		t.Errorf("cpu request %s", q.String())
	}
	// The read-only root keeps a writable in-memory /tmp, sized as on the engine.
	var tmp bool
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/tmp" {
			tmp = true
		}
	}
	if !tmp || len(s.Volumes) != 1 || s.Volumes[0].EmptyDir == nil || s.Volumes[0].EmptyDir.Medium != corev1.StorageMediumMemory ||
		s.Volumes[0].EmptyDir.SizeLimit == nil || s.Volumes[0].EmptyDir.SizeLimit.Cmp(resource.MustParse("256Mi")) != 0 {
		t.Errorf("volumes %+v mounts %+v: want a 256Mi memory emptyDir at /tmp", s.Volumes, c.VolumeMounts)
	}
	if len(c.Env) != len(plan.Env) {
		t.Errorf("env %v, want the plan's %v", c.Env, plan.Env)
	}
}

func TestBuildPodUsers(t *testing.T) {
	for _, tc := range []struct {
		user     string
		uid, gid int64
		nonRoot  bool
		wantErr  bool
	}{
		{"", DefaultUID, DefaultUID, true, false},
		{"1000", 1000, 1000, true, false},
		{"1000:2000", 1000, 2000, true, false},
		{"root", 0, 0, false, false},
		{"0:0", 0, 0, false, false},
		{"agent", 0, 0, false, true},
		{"1000:staff", 0, 0, false, true},
	} {
		plan := testPlan(t, func(r *launchplan.Request) { r.Sandbox.User = tc.user })
		pod, err := BuildPod(plan, Options{})
		if tc.wantErr {
			if !errors.Is(err, errdefs.ErrUnsupported) {
				t.Errorf("user %q: err %v, want ErrUnsupported", tc.user, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("user %q: %v", tc.user, err)
		}
		psc := pod.Spec.SecurityContext
		if *psc.RunAsUser != tc.uid || *psc.RunAsGroup != tc.gid || *psc.RunAsNonRoot != tc.nonRoot || *pod.Spec.Containers[0].SecurityContext.RunAsNonRoot != tc.nonRoot {
			t.Errorf("user %q: uid %d gid %d nonRoot %v", tc.user, *psc.RunAsUser, *psc.RunAsGroup, *psc.RunAsNonRoot)
		}
	}
}

func TestBuildPodRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(*launchplan.Request)
		key  string
	}{
		{"privileged", func(r *launchplan.Request) { r.Sandbox.Privileged = true }, "sandbox.privileged"},
		{"dev fuse", func(r *launchplan.Request) { r.Sandbox.MountDevFuse = true }, "sandbox.mount_dev_fuse"},
		{"gpus", func(r *launchplan.Request) { r.Sandbox.GPUs = []string{"nvidia.com/gpu=all"} }, "sandbox.gpus"},
		{"allowlist without a network", func(r *launchplan.Request) { r.Egress.Mode = egress.ModeAllowlist; r.Sandbox.Network = "none" }, "sandbox.network"},
		{"named network", func(r *launchplan.Request) { r.Egress.Mode = egress.ModeOpen; r.Sandbox.Network = "mynet" }, "sandbox.network"},
		{"upper-case name", func(r *launchplan.Request) { r.Name = "Sandbox_1" }, "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := testPlan(t, tc.mut)
			_, err := BuildPod(plan, Options{})
			var ce *errdefs.ConfigError
			if !errors.As(err, &ce) || ce.Key != tc.key {
				t.Fatalf("err %v, want a config error on %s", err, tc.key)
			}
		})
	}
}

func TestBuildNetworkPolicy(t *testing.T) {
	pod, err := BuildPod(testPlan(t, nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode        egress.Mode
		egressRules int
	}{{egress.ModeNone, 0}, {egress.ModeOpen, 1}} {
		np := BuildNetworkPolicy(pod, tc.mode)
		if np.Spec.PodSelector.MatchLabels[launchplan.LabelSession] != "0123456789abcdef" || np.Spec.PodSelector.MatchLabels[launchplan.LabelManaged] != "true" {
			t.Errorf("%s: selector %v", tc.mode, np.Spec.PodSelector.MatchLabels)
		}
		if len(np.Spec.PolicyTypes) != 2 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress || np.Spec.PolicyTypes[1] != networkingv1.PolicyTypeEgress {
			t.Errorf("%s: policy types %v", tc.mode, np.Spec.PolicyTypes)
		}
		if len(np.Spec.Ingress) != 0 || len(np.Spec.Egress) != tc.egressRules {
			t.Errorf("%s: ingress %v egress %v", tc.mode, np.Spec.Ingress, np.Spec.Egress)
		}
		if tc.egressRules == 1 && (len(np.Spec.Egress[0].To) != 0 || len(np.Spec.Egress[0].Ports) != 0) {
			t.Errorf("open egress rule %+v is not allow-all", np.Spec.Egress[0])
		}
	}
}

// runningReactor makes every created Pod Running, as a kubelet would.
func runningReactor(cs *fake.Clientset, phase corev1.PodPhase, waiting string) {
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		pod.UID = "uid-1"
		pod.Namespace = a.GetNamespace()
		pod.Status.Phase = phase
		if waiting != "" {
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, Image: pod.Spec.Containers[0].Image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting, Message: "not present"}}}}
		}
		if err := cs.Tracker().Create(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, pod, pod.Namespace); err != nil {
			return true, nil, err
		}
		return true, pod, nil
	})
}

func TestCreateRunning(t *testing.T) {
	cs := fake.NewClientset()
	runningReactor(cs, corev1.PodRunning, "")
	c := NewForClientset(cs, "sb", Options{})
	plan := testPlan(t, nil)
	sb, err := c.Create(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if sb.Name != plan.Name || !sb.Running() || !sb.Managed() {
		t.Errorf("sandbox %+v", sb)
	}
	np, err := cs.NetworkingV1().NetworkPolicies("sb").Get(context.Background(), plan.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("network policy: %v", err)
	}
	if len(np.OwnerReferences) != 1 || np.OwnerReferences[0].Kind != "Pod" || np.OwnerReferences[0].UID != "uid-1" {
		t.Errorf("policy owners %+v: want the Pod", np.OwnerReferences)
	}
	list, err := c.List(context.Background(), ListOptions{})
	if err != nil || len(list) != 1 || list[0].Name != plan.Name {
		t.Fatalf("list %+v, %v", list, err)
	}
	if _, err := c.Remove(context.Background(), plan.Name, RemoveOptions{}); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("rm without force: %v, want ErrConflict", err)
	}
	if _, err := c.Remove(context.Background(), plan.Name, RemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, cs)
}

func assertNothingLeft(t *testing.T, cs *fake.Clientset) {
	t.Helper()
	pods, _ := cs.CoreV1().Pods("sb").List(context.Background(), metav1.ListOptions{})
	nps, _ := cs.NetworkingV1().NetworkPolicies("sb").List(context.Background(), metav1.ListOptions{})
	if len(pods.Items)+len(nps.Items) != 0 {
		t.Errorf("left behind: %d pods, %d network policies", len(pods.Items), len(nps.Items))
	}
}

func TestCreateFailuresLeaveNothing(t *testing.T) {
	t.Run("image cannot be pulled", func(t *testing.T) {
		cs := fake.NewClientset()
		runningReactor(cs, corev1.PodPending, "ErrImageNeverPull")
		_, err := NewForClientset(cs, "sb", Options{}).Create(context.Background(), testPlan(t, nil))
		if err == nil || !errors.Is(err, errdefs.ErrUnavailable) {
			t.Fatalf("err %v", err)
		}
		if want := "cannot be pulled"; !contains(err.Error(), want) {
			t.Errorf("err %q lacks %q", err, want)
		}
		assertNothingLeft(t, cs)
	})
	t.Run("pending past the deadline", func(t *testing.T) {
		cs := fake.NewClientset()
		runningReactor(cs, corev1.PodPending, "")
		_, err := NewForClientset(cs, "sb", Options{StartTimeout: 300 * time.Millisecond}).Create(context.Background(), testPlan(t, nil))
		if !errors.Is(err, errdefs.ErrTimeout) {
			t.Fatalf("err %v, want ErrTimeout", err)
		}
		assertNothingLeft(t, cs)
	})
	t.Run("interrupted", func(t *testing.T) {
		cs := fake.NewClientset()
		runningReactor(cs, corev1.PodPending, "")
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		_, err := NewForClientset(cs, "sb", Options{}).Create(ctx, testPlan(t, nil))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", err)
		}
		assertNothingLeft(t, cs)
	})
	t.Run("forbidden", func(t *testing.T) {
		cs := fake.NewClientset()
		cs.PrependReactor("create", "networkpolicies", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "networking.k8s.io", Resource: "networkpolicies"}, "x", errors.New("no RBAC policy matched"))
		})
		_, err := NewForClientset(cs, "sb", Options{}).Create(context.Background(), testPlan(t, nil))
		if !errors.Is(err, errdefs.ErrPermissionDenied) || !contains(err.Error(), `namespace "sb"`) {
			t.Fatalf("err %v, want ErrPermissionDenied naming the namespace", err)
		}
		assertNothingLeft(t, cs)
	})
	t.Run("pod name taken", func(t *testing.T) {
		plan := testPlan(t, nil)
		other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: plan.Name, Namespace: "sb"}}
		cs := fake.NewClientset(other)
		_, err := NewForClientset(cs, "sb", Options{}).Create(context.Background(), plan)
		if !errors.Is(err, errdefs.ErrAlreadyExists) {
			t.Fatalf("err %v, want ErrAlreadyExists", err)
		}
		if _, err := cs.CoreV1().Pods("sb").Get(context.Background(), plan.Name, metav1.GetOptions{}); err != nil {
			t.Errorf("the other Pod was deleted: %v", err)
		}
		nps, _ := cs.NetworkingV1().NetworkPolicies("sb").List(context.Background(), metav1.ListOptions{})
		if len(nps.Items) != 0 {
			t.Errorf("network policy left behind")
		}
	})
}

func TestGetRefusesForeignAndBadNames(t *testing.T) {
	cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "sb"}})
	c := NewForClientset(cs, "sb", Options{})
	if _, err := c.Get(context.Background(), "web", false); !errors.Is(err, errdefs.ErrRefused) {
		t.Errorf("foreign pod: %v", err)
	}
	if _, err := c.Get(context.Background(), "web", true); err != nil {
		t.Errorf("foreign pod with --any: %v", err)
	}
	for _, bad := range []string{"../x", "A", "", "a/b", "a\x00"} {
		if _, err := c.Get(context.Background(), bad, true); !errors.Is(err, errdefs.ErrInvalidValue) {
			t.Errorf("name %q: %v", bad, err)
		}
	}
	if _, err := c.Get(context.Background(), "missing", false); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
	// rm --any of a foreign Pod leaves a policy of the same name alone.
	if _, err := cs.NetworkingV1().NetworkPolicies("sb").Create(context.Background(),
		&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Remove(context.Background(), "web", RemoveOptions{Any: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.NetworkingV1().NetworkPolicies("sb").Get(context.Background(), "web", metav1.GetOptions{}); err != nil {
		t.Errorf("the foreign policy was deleted: %v", err)
	}
}

func TestConnectKubeconfigErrors(t *testing.T) {
	t.Setenv("KUBECONFIG", t.TempDir()+"/none")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err := Connect(Options{})
	var ce *errdefs.ConfigError
	if !errors.As(err, &ce) || ce.Key != "kubernetes.kubeconfig" || !errors.Is(err, errdefs.ErrMissingRequired) {
		t.Errorf("no kubeconfig: %v", err)
	}
	_, err = Connect(Options{Kubeconfig: t.TempDir() + "/missing"})
	if !errors.As(err, &ce) || ce.Key != "kubernetes.kubeconfig" {
		t.Errorf("missing explicit kubeconfig: %v", err)
	}
}

func contains(s, sub string) bool { return len(sub) == 0 || len(s) >= len(sub) && indexOf(s, sub) >= 0 }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}
