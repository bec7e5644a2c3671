//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
)

// k8sTestCluster is the real single-node cluster scripts/k8s.sh brings up.
type k8sTestCluster struct {
	client *kubernetes.Clientset
	config *rest.Config
	image  string // sandbox image imported into the node's containerd
}

// k8sCluster connects to the cluster PODBOT_E2E_KUBECONFIG names (make
// test-k8s sets it from `scripts/k8s.sh env`) and checks that its node is
// Ready. Without it the test is skipped, except under CI=true, where it fails.
func k8sCluster(t testing.TB) k8sTestCluster {
	t.Helper()
	path := os.Getenv("PODBOT_E2E_KUBECONFIG")
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but PODBOT_E2E_KUBECONFIG is not set: run `make test-k8s`, which brings the cluster up")
		}
		t.Skip("PODBOT_E2E_KUBECONFIG not set: run `make test-k8s` or source <(scripts/k8s.sh env)")
	}
	image := os.Getenv("PODBOT_E2E_K8S_IMAGE")
	if image == "" {
		t.Fatal("PODBOT_E2E_KUBECONFIG is set but PODBOT_E2E_K8S_IMAGE is not: source <(scripts/k8s.sh env)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", path, err)
	}
	cfg.Timeout = 30 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("client for %s: %v", cfg.Host, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("API server %s does not answer: %v (is the cluster up? scripts/k8s.sh status)", cfg.Host, err)
	}
	ready := false
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
	}
	if !ready {
		t.Fatalf("API server %s has no Ready node (%d nodes): scripts/k8s.sh status", cfg.Host, len(nodes.Items))
	}
	return k8sTestCluster{client: cs, config: cfg, image: image}
}

// k8sNamespace creates a namespace of the test's own, deleted (with all it
// holds) when the test ends, and waits for its default service account.
func (c k8sTestCluster) k8sNamespace(t testing.TB, ctx context.Context) string {
	t.Helper()
	ns, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "podbot-" + suite.runID + "-",
			Labels:       map[string]string{"podbot.e2e": suite.runID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns.Name, err)
		}
	})
	for {
		_, err := c.client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return ns.Name
		}
		if !apierrors.IsNotFound(err) {
			t.Fatalf("service account default in %s: %v", ns.Name, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("namespace %s never got its default service account (is kube-controller-manager up?)", ns.Name)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// hardenedSmokePod is the Pod shape the Kubernetes backend builds on: non-root,
// no privilege escalation, no capabilities, the runtime's seccomp profile, a
// read-only root, no service-account token and no service links, an image that
// is never pulled.
func hardenedSmokePod(name, image string) *corev1.Pod {
	nobody := int64(65534)
	yes, no := true, false
	grace := int64(1)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{"podbot.e2e": suite.runID},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			TerminationGracePeriodSeconds: &grace,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   &yes,
				RunAsUser:      &nobody,
				RunAsGroup:     &nobody,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            "sandbox",
				Image:           image,
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{"sh", "-c", "echo podbot-k8s-ready; exec sleep infinity"},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no,
					Privileged:               &no,
					ReadOnlyRootFilesystem:   &yes,
					RunAsNonRoot:             &yes,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("50m"),
						corev1.ResourceMemory: resource.MustParse("32Mi"),
					},
					Limits: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("500m"),
						corev1.ResourceMemory: resource.MustParse("256Mi"),
					},
				},
			}},
		},
	}
}

// waitPodRunning waits until the Pod runs, failing fast (with the container's
// reason) when it cannot start.
func (c k8sTestCluster) waitPodRunning(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	for {
		pod, err := c.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get pod %s/%s: %v", ns, name, err)
		}
		switch pod.Status.Phase {
		case corev1.PodRunning:
			return
		case corev1.PodFailed, corev1.PodSucceeded:
			t.Fatalf("pod %s/%s ended (%s) before it ran: %s", ns, name, pod.Status.Phase, podReasons(pod))
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" {
				t.Fatalf("pod %s/%s cannot start: %s: %s", ns, name, w.Reason, w.Message)
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s/%s not Running in time: phase %s, %s", ns, name, pod.Status.Phase, podReasons(pod))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// podReasons summarizes a Pod's conditions and container states for a failure message.
func podReasons(pod *corev1.Pod) string {
	var parts []string
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			parts = append(parts, fmt.Sprintf("%s waiting: %s: %s", cs.Name, w.Reason, w.Message))
		}
		if x := cs.State.Terminated; x != nil {
			parts = append(parts, fmt.Sprintf("%s terminated: exit %d, %s: %s", cs.Name, x.ExitCode, x.Reason, x.Message))
		}
	}
	return strings.Join(parts, "; ")
}

// k8sExecResult is what one exec through the pods/exec subresource did.
type k8sExecResult struct {
	stdout, stderr string
	code           int
}

// k8sTransport picks the streaming protocol of one exec.
type k8sTransport int

const (
	k8sFallback  k8sTransport = iota // WebSocket, SPDY when the server refuses the upgrade (as kubectl does)
	k8sWebSocket                     // WebSocket only
	k8sSPDY                          // SPDY only
)

// exec runs cmd in the Pod's container through the API server's pods/exec
// subresource: WebSocket first, SPDY when the server refuses the upgrade.
func (c k8sTestCluster) exec(t *testing.T, ctx context.Context, ns, pod string, stdin string, cmd ...string) k8sExecResult {
	t.Helper()
	return c.execVia(t, ctx, k8sFallback, ns, pod, stdin, cmd...)
}

// execVia is exec over the given transport.
func (c k8sTestCluster) execVia(t *testing.T, ctx context.Context, via k8sTransport, ns, pod string, stdin string, cmd ...string) k8sExecResult {
	t.Helper()
	return c.execIn(t, ctx, via, ns, pod, "sandbox", stdin, cmd...)
}

// execIn is exec in the named container over the given transport.
func (c k8sTestCluster) execIn(t *testing.T, ctx context.Context, via k8sTransport, ns, pod, container, stdin string, cmd ...string) k8sExecResult {
	t.Helper()
	opts := &corev1.PodExecOptions{
		Container: container,
		Command:   cmd,
		Stdin:     stdin != "",
		Stdout:    true,
		Stderr:    true,
	}
	req := c.client.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(opts, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(c.config, "GET", req.URL().String())
	if err != nil {
		t.Fatalf("websocket executor: %v", err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.config, "POST", req.URL())
	if err != nil {
		t.Fatalf("spdy executor: %v", err)
	}
	var executor remotecommand.Executor
	switch via {
	case k8sWebSocket:
		executor = ws
	case k8sSPDY:
		executor = spdy
	default:
		executor, err = remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
		if err != nil {
			t.Fatalf("fallback executor: %v", err)
		}
	}
	var stdout, stderr bytes.Buffer
	streams := remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}
	if stdin != "" {
		streams.Stdin = strings.NewReader(stdin)
	}
	err = executor.StreamWithContext(ctx, streams)
	res := k8sExecResult{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr utilexec.CodeExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.code = exitErr.Code
	default:
		t.Fatalf("exec %v in %s/%s: %v (stderr %q)", cmd, ns, pod, err, res.stderr)
	}
	return res
}

// TestK8sClusterSmoke proves podbot's client side can drive the real cluster:
// a hardened Pod running the sandbox image on a real node (containerd, runc),
// exec through pods/exec with exit codes and stdin, the hardening seen from
// inside, logs, and deletion.
func TestK8sClusterSmoke(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	pods := c.client.CoreV1().Pods(ns)

	start := time.Now()
	if _, err := pods.Create(ctx, hardenedSmokePod("smoke", c.image), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	c.waitPodRunning(t, ctx, ns, "smoke")
	t.Logf("create -> Running: %v", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	id := c.exec(t, ctx, ns, "smoke", "", "id")
	t.Logf("exec id: %v", time.Since(start).Round(time.Millisecond))
	if id.code != 0 || !strings.HasPrefix(id.stdout, "uid=65534(") || !strings.Contains(id.stdout, "gid=65534(") {
		t.Fatalf("exec id: exit %d, stdout %q, stderr %q; want uid and gid 65534", id.code, id.stdout, id.stderr)
	}

	// Each transport on its own: stdout and stderr apart, the exit status, stdin.
	for _, tr := range []struct {
		name string
		via  k8sTransport
	}{{"websocket", k8sWebSocket}, {"spdy", k8sSPDY}} {
		if r := c.execVia(t, ctx, tr.via, ns, "smoke", "", "sh", "-c", "echo out; echo err >&2; exit 7"); r.code != 7 || r.stdout != "out\n" || r.stderr != "err\n" {
			t.Errorf("%s: exec exit 7: got exit %d, stdout %q, stderr %q", tr.name, r.code, r.stdout, r.stderr)
		}
		if r := c.execVia(t, ctx, tr.via, ns, "smoke", "through stdin\n", "cat"); r.code != 0 || r.stdout != "through stdin\n" {
			t.Errorf("%s: exec cat: got exit %d, stdout %q, stderr %q", tr.name, r.code, r.stdout, r.stderr)
		}
	}

	// The hardening as the process inside sees it: no capabilities, no new
	// privileges, a seccomp filter, a read-only root.
	status := c.exec(t, ctx, ns, "smoke", "", "grep", "-E", "^(CapEff|CapBnd|NoNewPrivs|Seccomp):", "/proc/self/status")
	for _, want := range []string{"CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
		if !strings.Contains(status.stdout, want) {
			t.Errorf("/proc/self/status lacks %q:\n%s", want, status.stdout)
		}
	}
	if r := c.exec(t, ctx, ns, "smoke", "", "touch", "/podbot-rootfs-write"); r.code == 0 {
		t.Errorf("touch on the root filesystem succeeded; want a read-only root")
	}
	if r := c.exec(t, ctx, ns, "smoke", "", "test", "-e", "/var/run/secrets/kubernetes.io/serviceaccount/token"); r.code == 0 {
		t.Errorf("a service-account token is mounted; want none")
	}

	// The test network reaches the bridge only: no default route out of the machine.
	routes := c.exec(t, ctx, ns, "smoke", "", "cat", "/proc/net/route")
	for _, line := range strings.Split(routes.stdout, "\n")[1:] {
		if f := strings.Fields(line); len(f) > 1 && f[1] == "00000000" {
			t.Errorf("the Pod has a default route (%s); want the bridge subnet only:\n%s", line, routes.stdout)
		}
	}

	logs, err := pods.GetLogs("smoke", &corev1.PodLogOptions{Container: "sandbox", LimitBytes: ptr(int64(4096))}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs: %v", err)
	}
	if string(logs) != "podbot-k8s-ready\n" {
		t.Errorf("logs = %q, want %q", logs, "podbot-k8s-ready\n")
	}

	start = time.Now()
	if err := pods.Delete(ctx, "smoke", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	for {
		_, err := pods.Get(ctx, "smoke", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if err != nil {
			t.Fatalf("get pod after delete: %v", err)
		}
		select {
		case <-ctx.Done():
			t.Fatal("pod still there after delete")
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Logf("delete -> gone: %v", time.Since(start).Round(time.Millisecond))
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
