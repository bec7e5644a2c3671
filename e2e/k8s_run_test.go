//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
)

// k8sStubAgent is the engine's stubAgent, run in a Pod: it writes its
// report under $HOME (a Pod has no host-mount workspace), prints it and
// its environment, shows what the launch put in (the credential file, the
// git identity, a read-only Secret mount), then prints the terminal's size
// after each line it reads until it sees the resized 40x100, and exits 7.
var k8sStubAgent = strings.Replace(strings.ReplaceAll(stubAgent, "/workspace/", "$HOME/"), "exit 7\n", `cat "$HOME/report.txt"
sed 's/^/ENV:/' "$HOME/env.txt"
echo "claude=$(cat "$HOME/.claude/settings.json")"
echo "gitname=$(git config --global user.name)"
if touch `+kube.SecretMountPath+`/x 2>/dev/null; then echo secret-ro=no; else echo secret-ro=yes; fi
echo "waiting-$((20+6))-for-input"
while read line; do
	size=$(stty size)
	echo "size2=$size"
	[ "$size" = "40 100" ] && break
done
exit 7
`, 1)

// k8sRunConfig is a podbot config running the custom agent sh -c script,
// with ~/.claude copied in and STUB_ALLOWED allowlisted.
func k8sRunConfig(script string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return fmt.Sprintf(`[agent]
kind = "custom"
command = "/bin/sh"
args = ["-c", %s]
env_allowlist = ["STUB_ALLOWED"]
[creds]
copy_claude = true
copy_codex = false
`, q(script))
}

// k8sHome makes a host home directory holding ~/.claude/settings.json
// (marker) and a git identity, and returns it.
func k8sHome(t *testing.T, marker string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(marker), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = K8s Stub\n\temail = stub@example.test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// TestK8sRunStubAgentOnTerminal runs the stub agent under podbot run on
// the cluster in a real pseudo-terminal: it gets a terminal of the local
// size and sees a resize, only the allowlisted variable, the credential
// file and git identity in its home, a read-only Secret mount; its exit
// status becomes podbot's. While it runs, the Pod spec and the Secret are
// checked: the Secret is Opaque, podbot's, owned by the Pod, mounted
// read-only, and neither the agent's variable nor the credential is in the
// Pod spec (env or anywhere in `kubectl get pod -o yaml`). The Pod is kept
// running afterwards; podbot rm deletes Pod, NetworkPolicy and Secret.
func TestK8sRunStubAgentOnTerminal(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	pb := c.podbot(ns)
	allowed, secret, marker := "allowed-"+suite.runID, "secret-"+suite.runID, `{"marker":"claude-`+suite.runID+`"}`
	pb.config = k8sRunConfig(k8sStubAgent)
	pb.env = []string{"HOME=" + k8sHome(t, marker), "STUB_ALLOWED=" + allowed, "STUB_SECRET=" + secret}
	name := "k8srun-" + suite.runID
	cmd := pb.cmd(t, ctx, "run", "--name", name)
	p := startOnPTY(t, cmd, 31, 97)
	// The progress line shows the script; only the agent prints the sum.
	if !waitFor(t, &p.out, "waiting-26-for-input", 2*time.Minute, nil) {
		_ = cmd.Process.Kill()
		t.Fatalf("the stub agent did not start; output:\n%s", p.out.String())
	}

	pod, err := c.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ct := pod.Spec.Containers[0]
	for _, e := range ct.Env {
		if e.ValueFrom != nil || strings.Contains(e.Value, allowed) || strings.Contains(e.Value, secret) || e.Name == "STUB_ALLOWED" {
			t.Errorf("Pod env %+v carries the agent's variable", e)
		}
	}
	if len(ct.EnvFrom) != 0 {
		t.Errorf("Pod envFrom %+v", ct.EnvFrom)
	}
	var secretVol string
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("hostPath volume %s", v.Name)
		}
		if v.Secret != nil {
			if v.Secret.SecretName != name {
				t.Errorf("secret volume names %q, want %q", v.Secret.SecretName, name)
			}
			secretVol = v.Name
		}
	}
	mounted := false
	for _, m := range ct.VolumeMounts {
		if m.Name == secretVol && secretVol != "" {
			mounted = m.ReadOnly && m.MountPath == kube.SecretMountPath
			if !mounted {
				t.Errorf("secret mount %+v: want read-only at %s", m, kube.SecretMountPath)
			}
		}
	}
	if !mounted {
		t.Errorf("the Secret is not mounted: volumes %+v mounts %+v", pod.Spec.Volumes, ct.VolumeMounts)
	}
	sec, err := c.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the sandbox's Secret: %v", err)
	}
	if sec.Type != corev1.SecretTypeOpaque || sec.Labels[launchplan.LabelManaged] != "true" ||
		sec.Labels[launchplan.LabelSession] != pod.Labels[launchplan.LabelSession] {
		t.Errorf("secret type %s labels %v", sec.Type, sec.Labels)
	}
	if len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != pod.UID || sec.OwnerReferences[0].Kind != "Pod" {
		t.Errorf("secret owners %+v: want the Pod", sec.OwnerReferences)
	}
	if string(sec.Data["env.STUB_ALLOWED"]) != allowed || len(sec.Data[kube.SecretCredentialsKey]) == 0 {
		t.Errorf("secret keys: want env.STUB_ALLOWED and %s", kube.SecretCredentialsKey)
	}
	for k, v := range sec.Data {
		if strings.Contains(string(v), secret) || strings.Contains(k, "STUB_SECRET") {
			t.Errorf("the unlisted variable is in the Secret (%s)", k)
		}
	}
	podYAML := c.podYAML(t, ctx, ns, name)
	for _, v := range []string{allowed, secret, "claude-" + suite.runID} {
		if strings.Contains(podYAML, v) {
			t.Errorf("the Pod's YAML holds %q", v)
		}
	}

	if err := pty.Setsize(p.ptmx, &pty.Winsize{Rows: 40, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	// The resize travels apart from the input; a line is sent until the
	// agent reports the new size.
	for i := 0; i < 100 && !strings.Contains(p.out.String(), "size2=40 100"); i++ {
		_, _ = p.ptmx.Write([]byte("go\r"))
		time.Sleep(100 * time.Millisecond)
	}
	code := p.wait(t, time.Minute)
	out := strings.ReplaceAll(p.out.String(), "\r", "")
	if code != 7 {
		t.Fatalf("podbot run exit %d, want the agent's 7; output:\n%s", code, out)
	}
	for _, want := range []string{"podbot: plan:", "podbot: create: " + name, "podbot: credentials: copying [/home/podbot/.claude] into /home/podbot",
		"podbot: git identity:", "podbot: agent: /bin/sh", "kept running"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// What the agent printed: everything after its progress line (which
	// quotes the script).
	_, agentOut, ok := strings.Cut(out, " (terminal)\n")
	if !ok {
		t.Fatalf("no agent progress line with a terminal:\n%s", out)
	}
	for _, want := range []string{"\ntty=yes\n", "\nsize=31 97\n", "\nsize2=40 100\n", "\nclaude=" + marker + "\n", "\ngitname=K8s Stub\n",
		"\nsecret-ro=yes\n", "podbot-stub-agent-ready\n"} {
		if !strings.Contains(agentOut, want) {
			t.Errorf("the agent's output lacks %q:\n%s", want, agentOut)
		}
	}
	defer func() {
		if t.Failed() {
			t.Logf("podbot run on the cluster:\n%s", out)
		}
	}()
	var env []string
	for _, l := range strings.Split(agentOut, "\n") {
		if v, ok := strings.CutPrefix(l, "ENV:"); ok {
			env = append(env, v)
		}
	}
	checkOnlyAllowlisted(t, strings.Join(env, "\n"), cmd.Env, "STUB_ALLOWED="+allowed, secret)

	if r := pb.run(t, ctx, nil, "ps"); r.Code != 0 || !strings.Contains(r.Stdout, name) {
		t.Errorf("podbot ps does not list the kept Pod: %+v", r)
	}
	if r := pb.run(t, ctx, nil, "rm", "-f", name); r.Code != 0 {
		t.Errorf("podbot rm -f: %+v", r)
	}
	c.waitGone(t, ctx, ns)
	c.nothingLeft(t, ctx, ns)
	c.noSecrets(t, ctx, ns)
}

// podYAML is `kubectl get pod -o yaml`, or the Pod as the API server
// returns it (JSON) when kubectl is not installed.
func (c k8sTestCluster) podYAML(t *testing.T, ctx context.Context, ns, name string) string {
	t.Helper()
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", os.Getenv("PODBOT_E2E_KUBECONFIG"), "-n", ns, "get", "pod", name, "-o", "yaml").Output()
		if err != nil {
			t.Fatalf("kubectl get pod: %v", err)
		}
		return string(out)
	}
	raw, err := c.client.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").Name(name).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// noSecrets fails the test when the namespace holds a Secret.
func (c k8sTestCluster) noSecrets(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	list, err := c.client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		t.Errorf("Secret %s left behind", s.Name)
	}
}

// TestK8sRunInterruptedLeavesNothing sends SIGINT to podbot run on the
// cluster right after each progress line, up to the attached agent, and
// checks that no Pod, NetworkPolicy or Secret is left.
func TestK8sRunInterruptedLeavesNothing(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	pb := c.podbot(ns)
	pb.config = k8sRunConfig("echo agent-up; exec sleep 300")
	pb.env = []string{"HOME=" + k8sHome(t, "{}"), "STUB_ALLOWED=x"}
	reachedAgent := false
	for k := 1; k <= 10 && !reachedAgent; k++ {
		cmd := pb.cmd(t, ctx, "run", "--rm", "--name", fmt.Sprintf("k8sint%d-%s", k, suite.runID))
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		var out lockedBuffer
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := watchLines(stderr)
		got, ok := lines.waitLines("podbot: ", k, 2*time.Minute)
		if !ok {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("run %d: podbot ended before progress line %d:\n%s", k, k, joinLines(got))
		}
		last := lastWithPrefix(got, "podbot: ")
		if reachedAgent = strings.HasPrefix(last, "podbot: agent:"); reachedAgent {
			// Interrupt once the agent runs in its Pod.
			waitFor(t, &out, "agent-up", time.Minute, nil)
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		code := exitStatus(t, cmd.Wait(), cmd.Args)
		all, _ := lines.waitLines("\x00never", 1, 2*time.Second)
		if code == 0 {
			t.Errorf("run %d (interrupted after %q): exit 0, want a failure", k, last)
		}
		c.waitGone(t, ctx, ns)
		c.nothingLeft(t, ctx, ns)
		c.noSecrets(t, ctx, ns)
		if t.Failed() {
			t.Fatalf("run %d (interrupted after %q): left something behind\n%s", k, last, joinLines(all))
		}
		t.Logf("run %d: interrupted after %q: exit %d, nothing left", k, last, code)
	}
	if !reachedAgent {
		t.Fatal("no run reached the agent step")
	}
}

// probeAgent is an ACP agent that reports the client capabilities it saw
// in its initialize result's _meta, and on session/new asks the client to
// read a file and open a terminal, then reports the answers it got in the
// session/new result's _meta.
const probeAgent = `import json, sys

def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()

lines = iter(sys.stdin)
for line in lines:
    msg = json.loads(line)
    method = msg.get("method")
    if method == "initialize":
        seen = (msg.get("params") or {}).get("clientCapabilities")
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": [], "_meta": {"podbot.e2e/seen": seen}}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": "fs", "method": "fs/read_text_file", "params": {"sessionId": "s1", "path": "/etc/passwd"}})
        send({"jsonrpc": "2.0", "id": "term", "method": "terminal/create", "params": {"sessionId": "s1", "command": "id"}})
        got = {}
        for l in lines:
            r = json.loads(l)
            if r.get("id") in ("fs", "term") and "method" not in r:
                got[r["id"]] = r
                if len(got) == 2:
                    break
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "s1", "_meta": {"podbot.e2e/fs": got.get("fs"), "podbot.e2e/term": got.get("term")}}})
`

// k8sHostConfig is a podbot config hosting the python3 ACP agent script.
func k8sHostConfig(script string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return fmt.Sprintf(`[agent]
kind = "custom"
mode = "acp"
command = "/usr/bin/python3"
args = ["-c", %s]
[creds]
copy_claude = false
copy_codex = false
`, q(script))
}

// TestK8sHostACPPolicy runs podbot host on the cluster with the ACP policy
// cases: the client's fs and terminal capabilities (and terminal auth) are
// masked before the agent sees them, the agent's fs/* and terminal/*
// requests are refused with -32601 by podbot and logged, the agent's
// terminal authentication methods never reach the client, stdout carries
// the protocol frames only, and the Pod, its NetworkPolicy and its Secret
// are gone when podbot exits.
func TestK8sHostACPPolicy(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)

	t.Run("fs and terminal", func(t *testing.T) {
		pb := c.podbot(ns)
		pb.config = k8sHostConfig(probeAgent)
		pb.env = []string{"STUB_ALLOWED=x"}
		frames := []string{
			`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,"auth":{"terminal":true}},"clientInfo":{"name":"e2e","version":"1"}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`,
		}
		lines, stderr := exchangeFrames(t, pb.cmd(t, ctx, "host", "--name", "k8shost-"+suite.runID), frames)
		defer func() {
			if t.Failed() {
				t.Logf("podbot stderr:\n%s", stderr)
			}
		}()
		var init struct {
			ID     int `json:"id"`
			Result struct {
				Meta map[string]map[string]json.RawMessage `json:"_meta"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(lines[0]), &init); err != nil || init.ID != 0 {
			t.Fatalf("initialize answer %q: %v", lines[0], err)
		}
		seen := init.Result.Meta["podbot.e2e/seen"]
		for _, k := range []string{"fs", "terminal"} {
			if v, ok := seen[k]; ok {
				t.Errorf("the agent saw clientCapabilities.%s = %s", k, v)
			}
		}
		if strings.Contains(string(seen["auth"]), "terminal") {
			t.Errorf("the agent saw clientCapabilities.auth.terminal: %s", seen["auth"])
		}
		var sess struct {
			ID     int `json:"id"`
			Result struct {
				Meta map[string]struct {
					Error *rpcError `json:"error"`
				} `json:"_meta"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(lines[1]), &sess); err != nil || sess.ID != 1 {
			t.Fatalf("session/new answer %q: %v", lines[1], err)
		}
		for key, method := range map[string]string{"podbot.e2e/fs": "fs/read_text_file", "podbot.e2e/term": "terminal/create"} {
			e := sess.Result.Meta[key].Error
			if e == nil || e.Code != -32601 || e.Data["method"] != method {
				t.Errorf("%s: the agent got %+v, want podbot's -32601 refusal", method, e)
			}
		}
		if !strings.Contains(stderr, "refused an agent request") {
			t.Errorf("refusals were not logged on stderr")
		}
		c.waitGone(t, ctx, ns)
		c.nothingLeft(t, ctx, ns)
		c.noSecrets(t, ctx, ns)
	})

	t.Run("terminal auth", func(t *testing.T) {
		pb := c.podbot(ns)
		pb.config = k8sHostConfig(hostileAgent)
		lines, stderr := exchangeFrames(t, pb.cmd(t, ctx, "host", "--name", "k8shostile-"+suite.runID), hostileClientFrames)
		out := strings.Join(lines, "")
		for _, bad := range []string{"terminal-auth", `"terminal"`, `"Terminal"`, "PODBOT_", "--allow-host-delegation", "/bin/sh", "v1-terminal", "v2-terminal"} {
			if strings.Contains(out, bad) {
				t.Errorf("the client received %q:\n%s", bad, out)
			}
		}
		if n := strings.Count(stderr, "removed terminal authentication"); n != 3 {
			t.Errorf("%d removals logged, want 3:\n%s", n, stderr)
		}
		for _, seen := range strings.Split(stderr, "HOSTILE-SEEN ")[1:] {
			if seen, _, _ := strings.Cut(seen, "\n"); strings.Contains(seen, "terminal") {
				t.Errorf("the agent saw the client's terminal auth capability: %s", seen)
			}
		}
		c.waitGone(t, ctx, ns)
		c.nothingLeft(t, ctx, ns)
		c.noSecrets(t, ctx, ns)
	})
}

// codexProbeAgent is a Codex app-server stand-in: it answers initialize,
// and on thread/start asks the client to run a dynamic tool
// (item/tool/call), then answers with the reply it got.
const codexProbeAgent = `import json, sys

def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()

lines = iter(sys.stdin)
for line in lines:
    msg = json.loads(line)
    method = msg.get("method")
    if method == "initialize":
        send({"id": msg["id"], "result": {"userAgent": "probe"}})
    elif method == "thread/start":
        send({"id": "tool", "method": "item/tool/call", "params": {"tool": "shell", "arguments": {"cmd": "id"}}})
        for l in lines:
            r = json.loads(l)
            if r.get("id") == "tool" and "method" not in r:
                break
        send({"id": msg["id"], "result": {"toolReply": r}})
`

// TestK8sHostCodexAppServer runs podbot host in Codex app-server mode on
// the cluster with agent.codex_block_dynamic_tools: the agent's
// item/tool/call request is refused by podbot (-32601) and logged, the
// rest passes unchanged, and nothing is left.
func TestK8sHostCodexAppServer(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	pb := c.podbot(ns)
	pb.config = strings.Replace(k8sHostConfig(codexProbeAgent), `mode = "acp"`, "mode = \"codex_app_server\"\ncodex_block_dynamic_tools = true", 1)
	frames := []string{
		`{"id":0,"method":"initialize","params":{"clientInfo":{"name":"e2e","version":"1"}}}`,
		`{"id":1,"method":"thread/start","params":{}}`,
	}
	lines, stderr := exchangeFrames(t, pb.cmd(t, ctx, "host", "--name", "k8scodex-"+suite.runID), frames)
	if !strings.Contains(lines[0], `"userAgent": "probe"`) {
		t.Errorf("initialize answer %q", lines[0])
	}
	var resp struct {
		ID     int `json:"id"`
		Result struct {
			ToolReply struct {
				Error *rpcError `json:"error"`
			} `json:"toolReply"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &resp); err != nil || resp.ID != 1 {
		t.Fatalf("thread/start answer %q: %v", lines[1], err)
	}
	if e := resp.Result.ToolReply.Error; e == nil || e.Code != -32601 || !strings.Contains(e.Message, "codex_block_dynamic_tools") {
		t.Errorf("item/tool/call: the agent got %+v, want podbot's -32601 refusal", e)
	}
	if !strings.Contains(stderr, "refused an agent request") {
		t.Errorf("the refusal was not logged:\n%s", stderr)
	}
	c.waitGone(t, ctx, ns)
	c.nothingLeft(t, ctx, ns)
	c.noSecrets(t, ctx, ns)
}

// TestK8sHostSignalCleansUp sends SIGTERM to podbot host on the cluster
// while its agent runs and the client still holds stdin open: podbot
// exits 130 with nothing on stdout, and the Pod, its NetworkPolicy and
// its Secret (the agent has an allowlisted variable) are gone.
func TestK8sHostSignalCleansUp(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	pb := c.podbot(ns)
	pb.config = strings.Replace(k8sHostConfig(probeAgent), "[creds]", "env_allowlist = [\"STUB_ALLOWED\"]\n[creds]", 1)
	pb.env = []string{"STUB_ALLOWED=x"}
	cmd := pb.cmd(t, ctx, "host", "--name", "k8ssig-"+suite.runID)
	stdin, err := cmd.StdinPipe() // held open: the IDE is still there
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var out lockedBuffer
	errOut := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = &out, errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(t, errOut, "hosting agent", time.Minute, nil) {
		_ = cmd.Process.Kill()
		t.Fatalf("podbot host never started the agent:\n%s", errOut.String())
	}
	if _, err := c.client.CoreV1().Secrets(ns).Get(ctx, "k8ssig-"+suite.runID, metav1.GetOptions{}); err != nil {
		t.Errorf("the sandbox's Secret: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitStatus(t, cmd.Wait(), cmd.Args); code != 130 {
		t.Errorf("exit %d after SIGTERM, want 130 (interrupted)", code)
	}
	if out.String() != "" {
		t.Errorf("stdout held %q; no frame was exchanged", out.String())
	}
	c.waitGone(t, ctx, ns)
	c.nothingLeft(t, ctx, ns)
	c.noSecrets(t, ctx, ns)
}

// TestK8sRunRefusals: what the backend cannot do yet is refused before
// any object is made, naming the key.
func TestK8sRunRefusals(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	ws := t.TempDir()
	gh, _, keyPath := fakeGitHubAppTTL(t, tokenTTL)
	for _, tc := range []struct {
		config string
		args   []string
		want   string
	}{
		{fmt.Sprintf("[workspace]\nallowed_roots = [%q]\n", ws), []string{"run", "--workspace", ws}, "host-mount workspace"},
		// A github-app secret that would hold this run's token (other
		// [[secrets]] run on the cluster: TestK8sVault*).
		{fmt.Sprintf("[github]\napp_id = %d\ninstallation_id = %d\nprivate_key_path = %q\napi_url = %q\n"+
			"[[secrets]]\nname = \"gh\"\nsource = \"github-app\"\nhosts = [\"github.com\"]\nbasic_auth_user = \"x-access-token\"\n",
			gh.AppID(), gh.InstallationID(), keyPath, gh.URL),
			[]string{"run", "--repo", "octo-org/demo", "--branch", "main"}, "secrets[0].source"},
		{"[sandbox]\nprivileged = true\n", []string{"run"}, "sandbox.privileged"},
	} {
		pb := c.podbot(ns)
		pb.config = k8sRunConfig("true") + tc.config
		pb.env = []string{"HOME=" + t.TempDir(), "API_KEY=x"}
		r := pb.run(t, ctx, nil, tc.args...)
		if r.Code == 0 || !strings.Contains(r.Stderr, tc.want) || !strings.Contains(r.Stderr, "kubernetes") {
			t.Errorf("%v: exit %d, stderr %q; want a refusal naming %s", tc.args, r.Code, r.Stderr, tc.want)
		}
	}
	c.nothingLeft(t, ctx, ns)
	c.noSecrets(t, ctx, ns)
}

// k8sPodBridge is the bridge the test cluster's Pods hang off
// (scripts/k8s.sh): its address on the host is the one address outside
// their own network namespace that Pods reach.
const k8sPodBridge = "podbot-k8s0"

// Besides the host's address on the Pod bridge (private, 10.213.0.1), the
// test cluster's Pods have a route to two stand-ins for the outside that
// scripts/k8s.sh up puts on that bridge too (/32 addresses of the host).
const (
	// k8sOutsidePublic stands for a public address (TEST-NET-3): an
	// allowlist proxy Pod's NetworkPolicy lets it out there.
	k8sOutsidePublic = "203.0.113.1"
	// k8sOutsideLinkLocal stands for the link-local range of the cloud
	// metadata service (169.254.169.254 itself is the host's to use).
	k8sOutsideLinkLocal = "169.254.213.1"
)

// podReachableAddr is the host's address on the Pods' bridge.
func podReachableAddr(t *testing.T) string {
	t.Helper()
	ifc, err := net.InterfaceByName(k8sPodBridge)
	if err != nil {
		t.Fatalf("the test cluster's Pod bridge %s: %v (is the cluster up? scripts/k8s.sh status)", k8sPodBridge, err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Fatalf("%s has no IPv4 address", k8sPodBridge)
	return ""
}

// TestK8sRunClonesRepository: podbot run --repo OWNER/NAME --branch B on
// the cluster clones the repository by exec inside the Pod, into the
// workspace the agent starts in, from a git server on the host (a public
// repository: no token on this backend).
func TestK8sRunClonesRepository(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	repos := t.TempDir()
	newHostRepo(t, repos, "acme/sample", "feature")
	addr := podReachableAddr(t)
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: newGitServer(t, repos, nil).backend, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	pb := c.podbot(ns)
	pb.config = k8sRunConfig(`echo "cwd=$(pwd)"; echo "branch=$(git rev-parse --abbrev-ref HEAD)"; echo "feature=$(cat feature.txt)"`) +
		fmt.Sprintf("[github]\nclone_base_url = %q\n", "http://"+l.Addr().String()+"/")
	pb.env = []string{"HOME=" + t.TempDir()}
	r := pb.run(t, ctx, nil, "run", "--rm", "--network", "open", "--repo", "acme/sample", "--branch", "feature")
	if r.Code != 0 {
		t.Fatalf("podbot run: exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{"cwd=/work/sample\n", "branch=feature\n", "feature=feature\n"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s\nstderr: %s", want, r.Stdout, r.Stderr)
		}
	}
	if !strings.Contains(r.Stderr, "podbot: workspace: cloning acme/sample at feature") {
		t.Errorf("no clone step on stderr:\n%s", r.Stderr)
	}
	c.waitGone(t, ctx, ns)
	c.nothingLeft(t, ctx, ns)
	c.noSecrets(t, ctx, ns)
}
