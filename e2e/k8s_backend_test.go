//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
)

// k8sPodbot is the podbot binary on the kubernetes backend, in namespace ns
// of the test cluster, with the sandbox image never pulled and no network.
type k8sPodbot struct {
	c          k8sTestCluster
	ns         string
	kubeconfig string
	config     string // config file contents
	env        []string
}

func (c k8sTestCluster) podbot(ns string) k8sPodbot {
	return k8sPodbot{c: c, ns: ns, kubeconfig: os.Getenv("PODBOT_E2E_KUBECONFIG")}
}

func (p k8sPodbot) cmd(t *testing.T, ctx context.Context, args ...string) *exec.Cmd {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte(p.config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(suite.bin, "podbot"), append([]string{"--backend", "kubernetes"}, args...)...)
	cmd.Env = append(os.Environ(),
		"PODBOT_CONFIG_PATH="+cfg,
		"KUBECONFIG="+p.kubeconfig,
		"PODBOT_KUBERNETES_NAMESPACE="+p.ns,
		"PODBOT_KUBERNETES_IMAGE_PULL_POLICY=Never",
		"PODBOT_IMAGE="+p.c.image,
		"PODBOT_NETWORK_MODE=none",
	)
	cmd.Env = append(cmd.Env, p.env...)
	return cmd
}

func (p k8sPodbot) run(t *testing.T, ctx context.Context, stdin io.Reader, args ...string) result {
	t.Helper()
	cmd := p.cmd(t, ctx, args...)
	cmd.Stdin = stdin
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	return result{Code: exitStatus(t, cmd.Run(), args), Stdout: out.String(), Stderr: errOut.String()}
}

// nothingLeft fails the test when the namespace still holds a Pod or a
// NetworkPolicy (a Pod being deleted counts).
func (c k8sTestCluster) nothingLeft(t testing.TB, ctx context.Context, ns string) {
	t.Helper()
	pods, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nps, err := c.client.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		t.Errorf("Pod %s left behind (phase %s)", p.Name, p.Status.Phase)
	}
	for _, np := range nps.Items {
		t.Errorf("NetworkPolicy %s left behind", np.Name)
	}
}

// TestK8sBackendLifecycle drives podbot create, exec, logs, ps and rm on the
// kubernetes backend against the real cluster, and checks the live Pod's
// spec field by field and its hardening from inside.
func TestK8sBackendLifecycle(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	pb := c.podbot(ns)
	// Pod Security admission turns away a Pod that is not at least "baseline".
	nsObj, err := c.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
	if _, err := c.client.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	r := pb.run(t, ctx, nil, "create", "--read-only", "--memory", "256m", "--cpus", "0.5", "--", "sh", "-c", "echo podbot-ready; exec sleep 3600")
	if r.Code != 0 {
		t.Fatalf("create: exit %d: %s", r.Code, r.Stderr)
	}
	name := strings.TrimSpace(r.Stdout)

	// The live Pod, field by field.
	pod, err := c.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %s after create returned", pod.Status.Phase)
	}
	s := pod.Spec
	if pod.Labels[launchplan.LabelManaged] != "true" || pod.Labels[launchplan.LabelIntent] != "interactive" || pod.Labels[launchplan.LabelSession] == "" {
		t.Errorf("labels %v", pod.Labels)
	}
	if s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken not false")
	}
	if s.EnableServiceLinks == nil || *s.EnableServiceLinks {
		t.Error("enableServiceLinks not false")
	}
	if s.HostNetwork || s.HostPID || s.HostIPC {
		t.Error("a host namespace is shared")
	}
	for _, v := range s.Volumes {
		if v.HostPath != nil {
			t.Errorf("hostPath volume %s", v.Name)
		}
	}
	psc := s.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != kube.DefaultUID ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v", psc)
	}
	if len(s.Containers) != 1 {
		t.Fatalf("%d containers", len(s.Containers))
	}
	ct := s.Containers[0]
	sc := ct.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Privileged == nil || *sc.Privileged ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil ||
		len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container security context %+v", sc)
	}
	kept := launchplan.DefaultKeptCapabilities()
	if len(sc.Capabilities.Add) != len(kept) {
		t.Errorf("capabilities added %v, want the engine's list %v", sc.Capabilities.Add, kept)
	}
	if q := ct.Resources.Limits[corev1.ResourceMemory]; q.Value() != 256<<20 {
		t.Errorf("memory limit %s", q.String())
	}
	if q := ct.Resources.Limits[corev1.ResourceCPU]; q.MilliValue() != 500 {
		t.Errorf("cpu limit %s", q.String())
	}
	if ct.ImagePullPolicy != corev1.PullNever || ct.Image != c.image {
		t.Errorf("image %s pull %s", ct.Image, ct.ImagePullPolicy)
	}
	for _, e := range ct.Env {
		if e.ValueFrom != nil {
			t.Errorf("env %s comes from %+v", e.Name, e.ValueFrom)
		}
	}
	np, err := c.client.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the sandbox's NetworkPolicy: %v", err)
	}
	if len(np.Spec.Ingress) != 0 || len(np.Spec.Egress) != 0 || len(np.Spec.PolicyTypes) != 2 ||
		np.Spec.PodSelector.MatchLabels[launchplan.LabelSession] != pod.Labels[launchplan.LabelSession] {
		t.Errorf("network policy %+v: want deny-all ingress and egress for this Pod", np.Spec)
	}
	if len(np.OwnerReferences) != 1 || np.OwnerReferences[0].UID != pod.UID {
		t.Errorf("network policy owners %+v: want the Pod", np.OwnerReferences)
	}

	// exec: exit codes, stdout and stderr apart, stdin, working directory, detached.
	if r := pb.run(t, ctx, nil, "exec", name, "--", "sh", "-c", "echo out; echo err >&2; exit 7"); r.Code != 7 || r.Stdout != "out\n" || r.Stderr != "err\n" {
		t.Errorf("exec exit 7: %+v", r)
	}
	if r := pb.run(t, ctx, strings.NewReader("through stdin\n"), "exec", name, "--", "cat"); r.Code != 0 || r.Stdout != "through stdin\n" {
		t.Errorf("exec cat: %+v", r)
	}
	if r := pb.run(t, ctx, nil, "exec", "-w", "/tmp", name, "--", "pwd"); r.Code != 0 || r.Stdout != "/tmp\n" {
		t.Errorf("exec -w /tmp pwd: %+v", r)
	}
	if r := pb.run(t, ctx, nil, "exec", "-d", name, "--", "sh", "-c", "echo hidden; exit 5"); r.Code != 5 || r.Stdout != "" {
		t.Errorf("exec -d: %+v", r)
	}
	// -t without a terminal: the output and the status still arrive when stdin ends at once.
	if r := pb.run(t, ctx, strings.NewReader(""), "exec", "-t", name, "--", "sh", "-c", "echo hello; exit 3"); r.Code != 3 || r.Stdout != "hello\r\n" {
		t.Errorf("exec -t with an empty stdin: %+v", r)
	}
	if r := pb.run(t, ctx, nil, "exec", name, "--", "no-such-command"); r.Code == 0 {
		t.Errorf("exec of a missing command: %+v", r)
	}
	if r := pb.run(t, ctx, nil, "exec", "-e", "TOKEN=x", name, "--", "true"); r.Code != 2 || !strings.Contains(r.Stderr, "audit log") {
		t.Errorf("exec -e: %+v, want a usage error", r)
	}
	status := pb.run(t, ctx, nil, "exec", name, "--", "grep", "-E", "^(CapEff|NoNewPrivs|Seccomp):", "/proc/self/status")
	for _, want := range []string{"CapEff:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
		if !strings.Contains(status.Stdout, want) {
			t.Errorf("/proc/self/status lacks %q: %+v", want, status)
		}
	}
	if r := pb.run(t, ctx, nil, "exec", name, "--", "touch", "/podbot-root-write"); r.Code == 0 {
		t.Error("the root filesystem is writable")
	}
	if r := pb.run(t, ctx, nil, "exec", name, "--", "touch", "/tmp/ok"); r.Code != 0 {
		t.Errorf("/tmp is not writable: %+v", r)
	}
	if r := pb.run(t, ctx, nil, "exec", name, "--", "test", "-e", "/var/run/secrets/kubernetes.io/serviceaccount/token"); r.Code == 0 {
		t.Error("a service-account token is mounted")
	}

	if r := pb.run(t, ctx, nil, "logs", name); r.Code != 0 || r.Stdout != "podbot-ready\n" {
		t.Errorf("logs: %+v", r)
	}
	var rows []struct {
		Name   string            `json:"name"`
		State  string            `json:"state"`
		Labels map[string]string `json:"labels"`
	}
	r = pb.run(t, ctx, nil, "ps", "--json")
	decodeJSON(t, r.Stdout, &rows)
	if len(rows) != 1 || rows[0].Name != name || rows[0].State != "running" || rows[0].Labels[launchplan.LabelVersion] == "" {
		t.Errorf("ps --json: %+v", rows)
	}

	if r := pb.run(t, ctx, nil, "stop", name); r.Code != 2 {
		t.Errorf("stop: %+v, want a usage error pointing at rm -f", r)
	}
	if r := pb.run(t, ctx, nil, "rm", name); r.Code != 4 || !strings.Contains(r.Stderr, "-f") {
		t.Errorf("rm of a running Pod without -f: %+v", r)
	}
	if r := pb.run(t, ctx, nil, "rm", "-f", name); r.Code != 0 || strings.TrimSpace(r.Stdout) != name {
		t.Fatalf("rm -f: %+v", r)
	}
	c.waitGone(t, ctx, ns)
	c.nothingLeft(t, ctx, ns)
	if r := pb.run(t, ctx, nil, "exec", name, "--", "true"); r.Code != 4 || !strings.Contains(r.Stderr, "no Pod") {
		t.Errorf("exec after rm: %+v", r)
	}
}

// waitGone waits until the namespace holds no Pod and no NetworkPolicy
// (a policy goes with its Pod), failing with what is left after a minute
// or when ctx ends.
func (c k8sTestCluster) waitGone(t testing.TB, ctx context.Context, ns string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		pods, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nps, err := c.client.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 0 && len(nps.Items) == 0 {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			c.nothingLeft(t, ctx, ns)
			t.Fatalf("%d Pods and %d NetworkPolicies still there", len(pods.Items), len(nps.Items))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestK8sBackendExecTTY runs podbot exec on a pseudo-terminal: the Pod's
// command gets a terminal of the local size, sees a resize, and its exit
// status comes back.
func TestK8sBackendExecTTY(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	pb := c.podbot(ns)
	r := pb.run(t, ctx, nil, "create")
	if r.Code != 0 {
		t.Fatalf("create: %+v", r)
	}
	name := strings.TrimSpace(r.Stdout)

	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	cmd := pb.cmd(t, ctx, "exec", name, "--", "sh", "-c",
		`tty; stty size; while read line; do echo "got:$line"; stty size; done; exit 9`)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			_, _ = out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	poke := func() { _, _ = ptmx.Write([]byte("again\r")) }
	if !waitFor(t, &out, "40 100", 30*time.Second, poke) {
		_ = cmd.Process.Kill()
		t.Fatalf("the Pod did not see the 40x100 terminal; output %q", out.String())
	}
	if !strings.Contains(out.String(), "/dev/pts/") {
		t.Errorf("no terminal in the Pod: %q", out.String())
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 33, Cols: 77}); err != nil {
		t.Fatal(err)
	}
	if !waitFor(t, &out, "33 77", 30*time.Second, poke) {
		_ = cmd.Process.Kill()
		t.Fatalf("the Pod did not see the resize to 33x77; output %q", out.String())
	}
	_, _ = ptmx.Write([]byte{4})
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code := exitStatus(t, err, nil); code != 9 {
			t.Errorf("exit %d, want 9; output %q", code, out.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("podbot exec did not end after Ctrl-D; output %q", out.String())
	}
	if r := pb.run(t, ctx, nil, "rm", "-f", name); r.Code != 0 {
		t.Errorf("rm -f: %+v", r)
	}
}

// TestK8sBackendRefusals checks what the backend refuses before any Pod
// exists: the privileged profile, a host user name, a bad Pod name.
func TestK8sBackendRefusals(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	pb := c.podbot(ns)
	for _, tc := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"create", "--privileged"}, nil, "privileged"},
		{[]string{"create"}, []string{"PODBOT_SANDBOX_USER=agent"}, "numeric"},
		{[]string{"create", "--name", "Bad_Name"}, nil, "Pod name"},
	} {
		p := pb
		p.env = tc.env
		r := p.run(t, ctx, nil, tc.args...)
		if r.Code != 3 || !strings.Contains(r.Stderr, tc.want) || !strings.Contains(r.Stderr, "kubernetes") && tc.want != "Pod name" {
			t.Errorf("%v %v: %+v, want a config error (exit 3) naming %q", tc.args, tc.env, r, tc.want)
		}
	}
	c.nothingLeft(t, ctx, ns)
}

// TestK8sBackendBadInput: an unreachable API server, no kubeconfig,
// rejected credentials, an RBAC-forbidden namespace, an image that cannot
// be pulled and a Pod Pending past its deadline each give an error naming
// the cause and leave no Pod behind.
func TestK8sBackendBadInput(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	dir := t.TempDir()

	t.Run("unreachable", func(t *testing.T) {
		pb := c.podbot(ns)
		pb.kubeconfig = writeKubeconfig(t, dir, "unreachable", "https://127.0.0.1:1", c.config.CAData, c.config.CAFile, "any")
		r := pb.run(t, ctx, nil, "create")
		t.Logf("%s", r.Stderr)
		if r.Code != 4 || !strings.Contains(r.Stderr, "cannot reach the API server") {
			t.Errorf("%+v", r)
		}
	})
	t.Run("no kubeconfig", func(t *testing.T) {
		pb := c.podbot(ns)
		pb.kubeconfig = filepath.Join(dir, "missing")
		pb.env = []string{"HOME=" + dir, "KUBERNETES_SERVICE_HOST="}
		r := pb.run(t, ctx, nil, "create")
		t.Logf("%s", r.Stderr)
		if r.Code != 3 || !strings.Contains(r.Stderr, "kubernetes.kubeconfig") || !strings.Contains(r.Stderr, "no kubeconfig") {
			t.Errorf("%+v", r)
		}
	})
	t.Run("rejected credentials", func(t *testing.T) {
		pb := c.podbot(ns)
		pb.kubeconfig = writeKubeconfig(t, dir, "expired", c.config.Host, c.config.CAData, c.config.CAFile, "podbot-expired-token")
		r := pb.run(t, ctx, nil, "create")
		t.Logf("%s", r.Stderr)
		if r.Code != 4 || !strings.Contains(r.Stderr, "rejected the kubeconfig's credentials") {
			t.Errorf("%+v", r)
		}
		if strings.Contains(r.Stderr, "podbot-expired-token") {
			t.Errorf("the token is in the error: %s", r.Stderr)
		}
	})
	t.Run("rbac forbidden", func(t *testing.T) {
		if _, err := c.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "no-rights"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		exp := int64(600)
		tr, err := c.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "no-rights", &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token for the service account: %v", err)
		}
		pb := c.podbot(ns)
		pb.kubeconfig = writeKubeconfig(t, dir, "forbidden", c.config.Host, c.config.CAData, c.config.CAFile, tr.Status.Token)
		r := pb.run(t, ctx, nil, "create")
		t.Logf("%s", r.Stderr)
		if r.Code != 4 || !strings.Contains(r.Stderr, "RBAC forbids") || !strings.Contains(r.Stderr, ns) {
			t.Errorf("%+v", r)
		}
		if r := pb.run(t, ctx, nil, "ps"); r.Code != 4 || !strings.Contains(r.Stderr, "RBAC forbids") {
			t.Errorf("ps: %+v", r)
		}
	})
	t.Run("image cannot be pulled", func(t *testing.T) {
		pb := c.podbot(ns)
		r := pb.run(t, ctx, nil, "--image", "localhost/podbot-no-such-image:1", "create")
		t.Logf("%s", r.Stderr)
		if r.Code != 4 || !strings.Contains(r.Stderr, "cannot be pulled") || !strings.Contains(r.Stderr, "podbot-no-such-image") {
			t.Errorf("%+v", r)
		}
		c.waitGone(t, ctx, ns)
	})
	t.Run("pending past the deadline", func(t *testing.T) {
		kc, err := kube.Connect(kube.Options{Kubeconfig: os.Getenv("PODBOT_E2E_KUBECONFIG"), Namespace: ns, ImagePullPolicy: "Never",
			NodeSelector: map[string]string{"podbot.e2e/no-such-node": "x"}, StartTimeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ro := true
		plan, err := launchplan.Normalize(launchplan.Request{Intent: launchplan.IntentInteractive, Image: c.image, SessionID: "pending0" + suite.runID,
			Version: "test", Sandbox: launchplan.Sandbox{ReadOnlyRootfs: &ro}, Egress: launchplan.Egress{Mode: egress.ModeNone}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = kc.Create(ctx, plan)
		t.Logf("%v", err)
		if !errors.Is(err, errdefs.ErrTimeout) || !strings.Contains(err.Error(), "Unschedulable") {
			t.Errorf("err %v, want ErrTimeout naming the unschedulable Pod", err)
		}
		c.waitGone(t, ctx, ns)
	})
	c.nothingLeft(t, ctx, ns)
}

// writeKubeconfig writes a kubeconfig for server with a bearer token.
func writeKubeconfig(t *testing.T, dir, name, server string, caData []byte, caFile, token string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData, CertificateAuthority: caFile}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "x"
	path := filepath.Join(dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestK8sBackendInterrupt sends SIGINT to podbot create while its Pod is
// Pending (no node matches its selector): podbot exits 130 and deletes the
// Pod and its NetworkPolicy.
func TestK8sBackendInterrupt(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	pb := c.podbot(ns)
	pb.config = "[kubernetes]\nnode_selector = { \"podbot.e2e/no-such-node\" = \"x\" }\n"
	c.interruptOncePodAppears(t, ctx, ns, pb.cmd(t, ctx, "create"), "", "Pod")
	// Deletion was requested before podbot exited; the Pod may still be
	// terminating, but it must be on its way out and the policy gone.
	pods, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			t.Errorf("Pod %s not being deleted after SIGINT", p.Name)
		}
	}
	c.waitGone(t, ctx, ns)
	c.nothingLeft(t, ctx, ns)
	if _, err := c.client.CoreV1().Pods(ns).Get(ctx, "x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get: %v", err)
	}
}

// interruptOncePodAppears starts cmd, waits until the namespace holds a Pod
// matching selector (what names it in a failure), sends SIGINT and expects
// podbot's exit status 130.
func (c k8sTestCluster) interruptOncePodAppears(t *testing.T, ctx context.Context, ns string, cmd *exec.Cmd, selector, what string) {
	t.Helper()
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for {
		pods, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			t.Fatalf("no %s appeared; stderr %s", what, errOut.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := exitStatus(t, cmd.Wait(), nil); code != 130 {
		t.Errorf("exit %d after SIGINT, want 130; stderr %s", code, errOut.String())
	}
}
