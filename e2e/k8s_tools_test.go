//go:build e2e && kubernetes

package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/sandbox"
	"github.com/podbot/podbot/tools"
)

// k8sToolSession opens a tool session on the kubernetes backend through
// the library, in namespace ns, with the sandbox image never pulled. Its
// Close is registered with the test; tests that check what is left call it
// themselves first.
func (c k8sTestCluster) k8sToolSession(t testing.TB, ctx context.Context, ns string, onEvent func(sandbox.Event)) podbot.ToolSession {
	t.Helper()
	kc, err := kube.Connect(kube.Options{Kubeconfig: os.Getenv("PODBOT_E2E_KUBECONFIG"), Namespace: ns, ImagePullPolicy: "Never"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Tools.Image = c.image
	s, err := podbot.NewKubeToolSession(ctx, kc, podbot.ToolSessionOptions{
		Config: cfg, SidecarPath: filepath.Join(suite.bin, "podbot-sidecar"), OnEvent: onEvent,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Close(cctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// enforcePodSecurity makes the namespace's Pod Security admission enforce level.
func (c k8sTestCluster) enforcePodSecurity(t *testing.T, ctx context.Context, ns, level string) {
	t.Helper()
	nsObj, err := c.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = level
	if _, err := c.client.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// checkPodNetworkNone is the kubernetes backend's network check: the Pod's
// own NetworkPolicy denies all ingress and egress and selects it, the Pod
// has no default route on the test cluster, and the policy is enforced:
// the tool Pod cannot open a TCP connection to an HTTP server on the
// host's public stand-in, which Pods without a policy reach
// (TestK8sNetworkPolicyNone has the control).
func (c k8sTestCluster) checkPodNetworkNone(ns string) func(t *testing.T, ctx context.Context, s podbot.ToolSession) {
	return func(t *testing.T, ctx context.Context, s podbot.ToolSession) {
		name := s.Info().ContainerName
		pod, err := c.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		np, err := c.client.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the tool Pod's NetworkPolicy: %v", err)
		}
		if len(np.Spec.Ingress) != 0 || len(np.Spec.Egress) != 0 || len(np.Spec.PolicyTypes) != 2 ||
			np.Spec.PodSelector.MatchLabels[launchplan.LabelSession] != pod.Labels[launchplan.LabelSession] {
			t.Errorf("network policy %+v: want deny-all ingress and egress selecting the Pod", np.Spec)
		}
		if len(np.OwnerReferences) != 1 || np.OwnerReferences[0].UID != pod.UID {
			t.Errorf("network policy owners %+v: want the Pod", np.OwnerReferences)
		}
		res, err := shellCall(ctx, s, 0, "cat", "/proc/net/route")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(res.Stdout, "\n")[1:] {
			if f := strings.Fields(line); len(f) > 1 && f[1] == "00000000" {
				t.Errorf("the tool Pod has a default route (%s)", line)
			}
		}
		srv := netpolServer(t, k8sOutsidePublic)
		res, err = shellCall(ctx, s, 0, "python3", "-c", tcpProbeScript, srv)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Stdout, srv+" closed") {
			t.Errorf("the tool Pod connected to %s despite its deny-all NetworkPolicy: %q %q", srv, res.Stdout, res.Stderr)
		}
	}
}

// TestK8sToolsEveryTool runs the engine's every-tool table in a tool
// session on the cluster, admitted under Pod Security "restricted", and
// checks the sidecar's install: the Pod's shape, the binary's SHA-256, a
// read-only mount the sandbox user cannot change, podbot-sidecar init as
// PID 1, path confinement and nothing left after Close.
func TestK8sToolsEveryTool(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	c.enforcePodSecurity(t, ctx, ns, "restricted")
	s := c.k8sToolSession(t, ctx, ns, nil)

	if got := len(s.Specs()); got != len(podbot.ToolSpecs(podbot.ToolBackendContainer)) {
		t.Errorf("%d tools, want the container backend's %d", got, len(podbot.ToolSpecs(podbot.ToolBackendContainer)))
	}
	// The files the engine's table finds through --mount, written instead.
	for path, content := range map[string]string{"proj/notes.txt": "alpha\nbeta\n", "proj/old.txt": "bye\n"} {
		args, _ := json.Marshal(map[string]string{"file_path": path, "content": content})
		if _, err := s.Call(ctx, tools.WriteFileTool, args); err != nil {
			t.Fatalf("write %s: %v", path, err)
		}
	}
	for _, call := range everyToolCalls(true) {
		out, err := s.Call(ctx, call.tool, call.jsonArgs(t))
		if err != nil || !strings.Contains(string(out), call.want) {
			t.Errorf("%s %v: %s, %v; want %q in it", call.tool, call.args, out, err, call.want)
		}
	}
	for _, bad := range []string{`{"file_path":"../etc/passwd"}`, `{"file_path":"/etc/passwd"}`} {
		if _, err := s.Call(ctx, tools.ReadFileTool, json.RawMessage(bad)); err == nil || !strings.Contains(err.Error(), "passwd") && !strings.Contains(err.Error(), "..") {
			t.Errorf("read_file %s: %v, want a refusal", bad, err)
		}
	}

	// The live Pod: the install container, the sidecar volume read-only,
	// the workspace an emptyDir, no host path.
	in := s.Info()
	if in.Backend != sandbox.BackendContainer || in.WorkspaceDir != "" || in.Link != sandbox.LinkExec {
		t.Errorf("info %+v", in)
	}
	pod, err := c.client.CoreV1().Pods(ns).Get(ctx, in.ContainerName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Labels[launchplan.LabelIntent] != string(launchplan.IntentTools) || pod.Spec.Containers[0].Image != c.image {
		t.Errorf("labels %v image %s", pod.Labels, pod.Spec.Containers[0].Image)
	}
	if len(pod.Spec.InitContainers) != 1 || pod.Spec.InitContainers[0].Name != kube.InstallContainerName {
		t.Errorf("init containers %+v", pod.Spec.InitContainers)
	}
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir == nil {
			t.Errorf("volume %s is not an emptyDir: %+v", v.Name, v.VolumeSource)
		}
	}
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		if m.MountPath == kube.SidecarDir && !m.ReadOnly {
			t.Errorf("the sidecar directory is writable in the sandbox container")
		}
	}
	for _, st := range pod.Status.InitContainerStatuses {
		if st.State.Terminated == nil || st.State.Terminated.ExitCode != 0 {
			t.Errorf("install container %+v: want ended with 0", st.State)
		}
	}

	// What arrived is the host's binary, and the sandbox user cannot change it.
	host, err := os.ReadFile(filepath.Join(suite.bin, "podbot-sidecar"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(host)
	res, err := shellCall(ctx, s, 0, "sha256sum", kube.SidecarPath)
	if err != nil || !strings.HasPrefix(res.Stdout, hex.EncodeToString(sum[:])+" ") {
		t.Errorf("sha256sum in the Pod: %+v, %v; want %x", res, err, sum)
	}
	// The file is the sandbox uid's (one user runs every container of a
	// Pod), so what refuses a change is the read-only mount: the owner's
	// chmod and rename fail with EROFS, not EPERM.
	for _, argv := range [][]string{
		{"chmod", "0777", kube.SidecarPath},
		{"mv", kube.SidecarPath, kube.SidecarPath + ".old"},
		{"rm", "-f", kube.SidecarPath},
		{"touch", kube.SidecarDir + "/planted"},
		{"sh", "-c", "echo x >> " + kube.SidecarPath},
	} {
		if res, err := shellCall(ctx, s, 0, argv...); err != nil || res.ExitCode == 0 ||
			!strings.Contains(res.Stderr, "Read-only file system") && !(argv[0] == "sh" && strings.Contains(res.Stderr, "Permission denied")) {
			t.Errorf("%v: %+v, %v; want refused by the read-only mount", argv, res, err)
		}
	}
	if res, err := shellCall(ctx, s, 0, "sh", "-c", `tr '\0' ' ' < /proc/1/cmdline`); err != nil || !strings.HasPrefix(res.Stdout, kube.SidecarPath+" init") {
		t.Errorf("PID 1 is %q, %v; want podbot-sidecar init", res.Stdout, err)
	}
	if res, err := shellCall(ctx, s, 0, "id", "-u"); err != nil || res.Stdout != "65534\n" {
		t.Errorf("tools run as %q, %v; want 65534", res.Stdout, err)
	}

	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, ctx, ns)
	c.nothingLeft(t, ctx, ns)
}

// TestK8sToolsHostileInputs runs the engine's hostile-input cases in a tool
// Pod: the fork bomb, symlinks out, a FIFO, the read-only root, and the
// network (the NetworkPolicy object and no default route). A Pod spec has
// no process limit; what holds the fork bomb is the kubelet's podPidsLimit
// (scripts/k8s.sh sets 2048), which the case proves before it forks
// (checkNodePidsLimit) and otherwise fails without forking.
func TestK8sToolsHostileInputs(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	s := c.k8sToolSession(t, ctx, ns, nil)
	checkHostileInputsWith(t, ctx, s, hostileChecks{forkBomb: true, pidsLimited: c.checkNodePidsLimit(ns), network: c.checkPodNetworkNone(ns)})
}

// checkNodePidsLimit proves that a process limit holds the session's Pod
// before a fork bomb runs in it, from two sources: the kubelet of the
// Pod's node, whose /configz (read through the API server's node proxy
// with the library's kube.Client.PodPidsLimits, as podbot doctor does)
// reports podPidsLimit, and, where the Pod's pids cgroup is visible on
// this machine (the test cluster's node is this host), its pids.max. The
// test cluster's API server refuses to proxy to its node's loopback
// address ("address not allowed"), so there the cgroup is the proof. It
// fails the test, naming podPidsLimit, when a source shows no limit or
// neither can be read.
func (c k8sTestCluster) checkNodePidsLimit(ns string) func(t *testing.T, ctx context.Context, s podbot.ToolSession) {
	return func(t *testing.T, ctx context.Context, s podbot.ToolSession) {
		t.Helper()
		const restart = "scripts/k8s.sh writes podPidsLimit: 2048 into the kubelet's configuration, which a running kubelet reads only when it starts (scripts/k8s.sh down, then up); the fork bomb was not run"
		if _, err := shellCall(ctx, s, 0, "true"); err != nil {
			t.Fatal(err)
		}
		pod, err := c.client.CoreV1().Pods(ns).Get(ctx, s.Info().ContainerName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		kc, err := kube.Connect(kube.Options{Kubeconfig: os.Getenv("PODBOT_E2E_KUBECONFIG"), Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := kc.PodPidsLimits(ctx)
		if err != nil {
			t.Fatalf("list the nodes: %v", err)
		}
		limit := "" // proven limit, as pids.max shows it
		for _, n := range nodes {
			if n.Node != pod.Spec.NodeName {
				continue
			}
			switch {
			case n.Err != nil:
				t.Logf("node %s: the kubelet's podPidsLimit cannot be read through the API server: %v", n.Node, n.Err)
			case !n.Limited():
				t.Fatalf("node %s runs Pods without a process limit (the kubelet's podPidsLimit is %d): a Pod spec has no process limit, so nothing would hold a fork bomb; %s", n.Node, n.Limit, restart)
			default:
				limit = fmt.Sprint(n.Limit)
			}
		}
		// The Pod's own cgroup, from the host (cgroupfs driver, v1 or v2).
		var files []string
		for _, pattern := range []string{"/sys/fs/cgroup/pids/kubepods/pod%s/pids.max", "/sys/fs/cgroup/pids/kubepods/*/pod%s/pids.max",
			"/sys/fs/cgroup/kubepods/pod%s/pids.max", "/sys/fs/cgroup/kubepods/*/pod%s/pids.max"} {
			m, _ := filepath.Glob(fmt.Sprintf(pattern, pod.UID))
			files = append(files, m...)
		}
		if len(files) == 0 {
			if limit == "" {
				t.Fatalf("no process limit of the Pod could be read (neither the kubelet's podPidsLimit nor the Pod's pids cgroup); the fork bomb was not run")
			}
			t.Logf("the Pod's pids cgroup is not visible here; the kubelet's podPidsLimit is %s", limit)
			return
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		got := strings.TrimSpace(string(b))
		if got == "max" {
			t.Fatalf("%s is max: the kubelet of node %s sets no podPidsLimit, so nothing would hold a fork bomb in the Pod; %s", files[0], pod.Spec.NodeName, restart)
		}
		if limit != "" && got != limit {
			t.Fatalf("%s is %s, want the kubelet's podPidsLimit %s; the fork bomb was not run", files[0], got, limit)
		}
		t.Logf("node %s: the Pod's %s = %s", pod.Spec.NodeName, files[0], got)
	}
}

// TestK8sToolsChangedFiles checks changed_files (inotify in the Pod).
func TestK8sToolsChangedFiles(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := c.k8sToolSession(t, ctx, c.k8sNamespace(t, ctx), nil)
	checkChangedFiles(t, ctx, s)
}

// TestK8sToolsConcurrentShellCalls makes 64 concurrent calls: one Pod, all
// multiplexed on the one exec stream.
func TestK8sToolsConcurrentShellCalls(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	created := &eventCounter{kind: sandbox.EventCreated}
	s := c.k8sToolSession(t, ctx, c.k8sNamespace(t, ctx), created.add)
	checkConcurrentShellCalls(t, ctx, s, created)
}

// TestK8sToolsStreamRecovers kills the sidecar serving the session's exec
// stream (from another exec): the next call gets a new stream into the
// same Pod, workspace intact.
func TestK8sToolsStreamRecovers(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	reconnected := &eventCounter{kind: sandbox.EventReconnected}
	ns := c.k8sNamespace(t, ctx)
	s := c.k8sToolSession(t, ctx, ns, reconnected.add)
	if _, err := s.Call(ctx, tools.WriteFileTool, json.RawMessage(`{"file_path":"keep.txt","content":"intact"}`)); err != nil {
		t.Fatal(err)
	}
	pod := s.Info().ContainerName
	kill := `for d in /proc/[0-9]*; do case "$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null)" in "` + kube.SidecarPath + ` serve"*) kill -9 "${d#/proc/}";; esac; done`
	if r := c.exec(t, ctx, ns, pod, "", "sh", "-c", kill); r.code != 0 {
		t.Fatalf("kill the serving sidecar: %+v", r)
	}
	out, err := s.Call(ctx, tools.ReadFileTool, json.RawMessage(`{"file_path":"keep.txt"}`))
	if err != nil || !strings.Contains(string(out), "intact") {
		t.Fatalf("call after the stream died: %s, %v", out, err)
	}
	if s.Info().ContainerName != pod || reconnected.count() != 1 {
		t.Errorf("Pod %s -> %s, %d reconnections; want the same Pod over a new stream", pod, s.Info().ContainerName, reconnected.count())
	}
}

// TestK8sToolsCLI drives podbot tools on the kubernetes backend through
// the binaries (podbot hands over to podbot-kube): tools call with the
// backend from --backend and from the environment, the refusal of --mount,
// and nothing left behind.
func TestK8sToolsCLI(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	pb := c.podbot(ns)
	pb.env = []string{"PODBOT_TOOLS_IMAGE=" + c.image}
	// k8sPodbot puts --backend kubernetes before the command; the tools
	// commands take it as their own --backend.
	r := pb.run(t, ctx, nil, "tools", "call", "shell_execute", "--args", `{"command":["id","-u"]}`)
	var res tools.ShellResult
	if r.Code != 0 {
		t.Fatalf("tools call: exit %d: %s", r.Code, r.Stderr)
	}
	decodeJSON(t, r.Stdout, &res)
	if res.Stdout != "65534\n" {
		t.Errorf("tools run as %q, want 65534", res.Stdout)
	}
	c.nothingLeft(t, ctx, ns)

	cmd := pb.cmd(t, ctx, "tools", "call", "read_file", "--args", `{"file_path":"../../etc/passwd"}`)
	cmd.Args = append(cmd.Args[:1], cmd.Args[3:]...) // no --backend flag: the environment selects the backend
	cmd.Env = append(cmd.Env, "PODBOT_SANDBOX_BACKEND=kubernetes")
	out, err := cmd.CombinedOutput()
	if code := exitStatus(t, err, cmd.Args); code != 1 || !strings.Contains(string(out), "..") {
		t.Errorf("path confinement through the CLI: exit %d: %s", code, out)
	}
	c.nothingLeft(t, ctx, ns)

	dir := t.TempDir()
	r = pb.run(t, ctx, nil, "tools", "call", "ls", "--mount", dir)
	if r.Code != 2 || !strings.Contains(r.Stderr, "--mount") || !strings.Contains(r.Stderr, "Pod") {
		t.Errorf("--mount: exit %d: %s", r.Code, r.Stderr)
	}
	c.nothingLeft(t, ctx, ns)
}

// mcpLine is one JSON-RPC message written to podbot tools serve.
func mcpLine(t *testing.T, w io.Writer, msg string) {
	t.Helper()
	if _, err := io.WriteString(w, msg+"\n"); err != nil {
		t.Fatal(err)
	}
}

// TestK8sToolsServeCtrlC runs podbot tools serve on the kubernetes backend
// as an MCP client would, and sends SIGINT twice: once after a call was
// answered, once while the call's Pod is still being made. Nothing is
// left in the namespace either time.
func TestK8sToolsServeCtrlC(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name       string
		waitAnswer bool
	}{{"after a call", true}, {"while the Pod starts", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ns := c.k8sNamespace(t, ctx)
			pb := c.podbot(ns)
			pb.env = []string{"PODBOT_TOOLS_IMAGE=" + c.image}
			cmd := pb.cmd(t, ctx, "tools", "serve")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewScanner(stdout)
			lines.Buffer(make([]byte, 1<<20), 8<<20)
			mcpLine(t, stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}`)
			if !lines.Scan() || !strings.Contains(lines.Text(), `"id":1`) {
				t.Fatalf("no initialize answer: %q (stderr %s)", lines.Text(), stderr.String())
			}
			mcpLine(t, stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			mcpLine(t, stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell_execute","arguments":{"command":["echo","served"]}}}`)
			if tc.waitAnswer {
				if !lines.Scan() || !strings.Contains(lines.Text(), `served\\n`) {
					t.Fatalf("no tools/call answer: %q (stderr %s)", lines.Text(), stderr.String())
				}
			} else {
				waitForPod(t, ctx, c, ns)
			}
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				t.Logf("tools serve ended after SIGINT: %v", err)
			case <-time.After(time.Minute):
				t.Fatalf("tools serve still runs a minute after SIGINT; stderr %s", stderr.String())
			}
			c.nothingLeft(t, ctx, ns)
		})
	}
}

// waitForPod waits until the namespace holds a Pod.
func waitForPod(t *testing.T, ctx context.Context, c k8sTestCluster, ns string) {
	t.Helper()
	for {
		pods, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) > 0 && pods.Items[0].Status.Phase == corev1.PodPending {
			return
		}
		if len(pods.Items) > 0 {
			t.Logf("the Pod was %s when seen", pods.Items[0].Status.Phase)
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("no Pod appeared")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestK8sToolsInspector drives podbot tools serve on the kubernetes
// backend with the MCP inspector, a real third-party MCP client, as the
// engine's TestToolsInspectorListsAndCallsEveryTool does: tools/list
// offers the container backend's tools, a call answers from a Pod, a
// refused path is a tool error, and each serve leaves nothing behind.
func TestK8sToolsInspector(t *testing.T) {
	c := k8sCluster(t)
	insp, node := os.Getenv("PODBOT_E2E_INSPECTOR"), os.Getenv("PODBOT_E2E_NODE")
	if insp == "" || node == "" {
		t.Fatal("PODBOT_E2E_INSPECTOR / PODBOT_E2E_NODE not set: source <(scripts/peers.sh env) first")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	pb := c.podbot(ns)
	pb.env = []string{"PODBOT_TOOLS_IMAGE=" + c.image}
	inspect := func(method ...string) result {
		t.Helper()
		serve := pb.cmd(t, ctx, "tools", "serve")
		// The inspector starts the server with a minimal environment: the
		// settings travel as flags and a config file.
		cfg := filepath.Join(t.TempDir(), "config.toml")
		toml := fmt.Sprintf("[sandbox]\nbackend = \"kubernetes\"\n[kubernetes]\nkubeconfig = %q\nnamespace = %q\nimage_pull_policy = \"Never\"\n[tools]\nimage = %q\n",
			pb.kubeconfig, ns, c.image)
		if err := os.WriteFile(cfg, []byte(toml), 0o600); err != nil {
			t.Fatal(err)
		}
		args := append([]string{insp, "--cli"}, method...)
		args = append(args, "--", serve.Path, "--config", cfg, "tools", "serve")
		cmd := exec.CommandContext(ctx, node, args...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		return result{Code: exitStatus(t, cmd.Run(), method), Stdout: out.String(), Stderr: errOut.String()}
	}
	res := inspect("--method", "tools/list")
	if res.Code != 0 {
		t.Fatalf("tools/list: exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	decodeJSON(t, res.Stdout, &list)
	if want := podbot.ToolSpecs(podbot.ToolBackendContainer); len(list.Tools) != len(want) {
		t.Errorf("tools/list gave %d tools, want %d", len(list.Tools), len(want))
	}
	c.nothingLeft(t, ctx, ns)
	res = inspect("--method", "tools/call", "--tool-name", tools.ShellExecuteTool, "--tool-arg", `command=["id","-u"]`)
	if res.Code != 0 || !strings.Contains(res.Stdout, `65534\n`) {
		t.Errorf("tools/call id -u: exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	c.nothingLeft(t, ctx, ns)
	res = inspect("--method", "tools/call", "--tool-name", tools.ReadFileTool, "--tool-arg", "file_path=../etc/passwd")
	if res.Code == 0 || !strings.Contains(res.Stdout+res.Stderr, "..") {
		t.Errorf("refused call: exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	c.nothingLeft(t, ctx, ns)
}
