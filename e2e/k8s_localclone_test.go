//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// k8sLC is podbot on the kubernetes backend run from host repository h
// (its HOME, so host git has an identity and no machine configuration).
func (c k8sTestCluster) k8sLC(ns string, h lcHost) k8sPodbot {
	pb := c.podbot(ns)
	pb.env = []string{"HOME=" + h.home}
	return pb
}

// must runs podbot and fails the test unless it exits 0.
func (p k8sPodbot) must(t *testing.T, ctx context.Context, args ...string) result {
	t.Helper()
	r := p.run(t, ctx, nil, args...)
	if r.Code != 0 {
		t.Fatalf("podbot %v: exit %d\nstdout: %s\nstderr: %s", args, r.Code, r.Stdout, r.Stderr)
	}
	return r
}

// TestK8sLocalClone: podbot create --repo PATH on the cluster copies the
// host repository into the Pod over a pods/exec stdin (labels as Pod
// annotations), a commit made there with podbot exec shows in podbot diff
// and log, podbot fetch brings the branch to the host, and podbot rm
// drops the host's base ref.
func TestK8sLocalClone(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	h := newLCHost(t)
	pb := c.k8sLC(ns, h)
	base := strings.TrimSpace(h.git(t, "-C", h.dir, "rev-parse", "HEAD"))

	name := strings.TrimSpace(pb.must(t, ctx, "create", "--name", "lc", "--repo", h.dir).Stdout)
	if name != "lc" {
		t.Fatalf("create printed %q", name)
	}
	pod, err := c.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := pod.Annotations
	dir := a["podbot.localclone.dir"]
	if a["podbot.localclone.repo"] != h.dir || a["podbot.localclone.base"] != base || a["podbot.localclone.branch"] != "podbot/lc" || dir != "/work/app" {
		t.Errorf("annotations %v", a)
	}
	if got := strings.TrimSpace(h.git(t, "-C", h.dir, "rev-parse", "refs/podbot/base/lc")); got != base {
		t.Errorf("host base ref %s, want %s", got, base)
	}
	ps := pb.must(t, ctx, "ps")
	if !strings.Contains(ps.Stdout, h.dir) || !strings.Contains(ps.Stdout, "podbot/lc") {
		t.Errorf("ps lacks REPO and BRANCH:\n%s", ps.Stdout)
	}
	in := pb.must(t, ctx, "exec", name, "--", "sh", "-c", `cd "$1" && git rev-parse --abbrev-ref HEAD && git rev-parse HEAD && cat b && ls -a ..`, "sh", dir).Stdout
	if want := "podbot/lc\n" + base + "\nbee\n"; !strings.HasPrefix(in, want) || strings.Contains(in, ".podbot-") {
		t.Errorf("the copy in the Pod:\n%s\nwant it to start with\n%s(and no bundle left)", in, want)
	}

	pb.must(t, ctx, "exec", name, "--", "sh", "-c", `set -e; cd "$1"
echo 'from the pod' >> a
git -c user.name=agent -c user.email=agent@example.com commit -qam 'agent change'
echo uncommitted > wip
git rev-parse HEAD`, "sh", dir)
	tip := strings.TrimSpace(pb.must(t, ctx, "exec", name, "--", "git", "-C", dir, "rev-parse", "HEAD").Stdout)

	diff := pb.must(t, ctx, "diff", "--repo", h.dir, name).Stdout
	if !strings.Contains(diff, "+from the pod") || !strings.Contains(diff, "+uncommitted") {
		t.Errorf("diff:\n%s", diff)
	}
	if stat := pb.must(t, ctx, "diff", "--stat", "--repo", h.dir, name).Stdout; !strings.Contains(stat, "2 files changed") {
		t.Errorf("diff --stat:\n%s", stat)
	}
	if lg := pb.must(t, ctx, "log", "--repo", h.dir, name).Stdout; !strings.Contains(lg, "agent change") {
		t.Errorf("log:\n%s", lg)
	}
	fetch := pb.must(t, ctx, "fetch", "--repo", h.dir, name).Stdout
	if !strings.Contains(fetch, "podbot/lc "+tip+" (1 commit(s)") {
		t.Errorf("fetch printed %q, want tip %s", fetch, tip)
	}
	if got := strings.TrimSpace(h.git(t, "-C", h.dir, "rev-parse", "refs/heads/podbot/lc")); got != tip {
		t.Errorf("host branch at %s, want %s", got, tip)
	}
	// A sandbox made from another repository is refused.
	other := newLCHost(t)
	if r := pb.run(t, ctx, nil, "diff", "--repo", other.dir, name); r.Code != 7 || !strings.Contains(r.Stderr, "not from this repository") {
		t.Errorf("diff from another repository: %+v", r)
	}
	pb.must(t, ctx, "rm", "-f", name)
	if refs := h.git(t, "-C", h.dir, "for-each-ref", "refs/podbot/"); refs != "" {
		t.Errorf("rm left the base ref: %s", refs)
	}
	c.waitGone(t, ctx, ns)
}

// TestK8sLocalCloneHostile plays a hostile agent in the Pod (hostileScript
// without its git wrapper: the Pod's user cannot replace git): after
// podbot diff, log, fetch and apply no command it planted ran on the
// host, the host's config, hooks and refs are as they were (plus the
// fetched branch), and escapes reach the terminal only as visible text.
func TestK8sLocalCloneHostile(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	h := newLCHost(t)
	pb := c.k8sLC(ns, h)
	marker := filepath.Join(t.TempDir(), "marker")
	script, _, ok := strings.Cut(hostileScript, "cat > /usr/local/bin/git")
	if !ok {
		t.Fatal("hostileScript changed: no git wrapper to cut")
	}
	script = strings.Replace(script, "cd /work/app", `cd "$2"`, 1)
	script = strings.ReplaceAll(script, "/work/app/.githooks", `"$2"/.githooks`)
	name := strings.TrimSpace(pb.must(t, ctx, "create", "--name", "lc-hostile", "--repo", h.dir).Stdout)
	pb.must(t, ctx, "exec", name, "--", "sh", "-c", script, "sh", marker, "/work/app")

	before := h.state(t)
	refsBefore := h.git(t, "-C", h.dir, "for-each-ref", "--format=%(refname) %(objectname)")
	diff := pb.must(t, ctx, "diff", "--repo", h.dir, name)
	if rawEscapes(diff.Stdout) || rawEscapes(diff.Stderr) || !strings.Contains(diff.Stdout, `\x1b[31mred`) || !strings.Contains(diff.Stdout, "+line from agent") {
		t.Errorf("diff:\n%q", diff.Stdout)
	}
	if lg := pb.must(t, ctx, "log", "--repo", h.dir, name); rawEscapes(lg.Stdout) || !strings.Contains(lg.Stdout, `agent \x1b]0;title\x07\x1b[2J message`) {
		t.Errorf("log:\n%q", lg.Stdout)
	}
	pb.must(t, ctx, "fetch", "--repo", h.dir, name)
	tip := strings.TrimSpace(h.git(t, "-C", h.dir, "rev-parse", "refs/heads/podbot/"+name))
	refsAfter := h.git(t, "-C", h.dir, "for-each-ref", "--format=%(refname) %(objectname)")
	if want := refsBefore + "refs/heads/podbot/" + name + " " + tip + "\n"; sortedLines(refsAfter) != sortedLines(want) {
		t.Errorf("refs after fetch:\n%s\nwant:\n%s", refsAfter, want)
	}
	if after := h.state(t); after != before {
		t.Errorf("fetch changed the host:\n%s\nwas:\n%s", after, before)
	}
	pb.must(t, ctx, "apply", "--repo", h.dir, name)
	if got, _ := os.ReadFile(filepath.Join(h.dir, "a")); !strings.HasSuffix(string(got), "line from agent\n") {
		t.Errorf("apply did not bring the change: %q", got)
	}
	h.git(t, "-C", h.dir, "status")
	h.git(t, "-C", h.dir, "diff", "HEAD~1")
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("a command planted in the Pod ran on the host (%s exists)", marker)
	}
	cfg, _ := os.ReadFile(filepath.Join(h.dir, ".git", "config"))
	if strings.Contains(string(cfg), "evil") || strings.Contains(string(cfg), "fsmonitor") {
		t.Errorf("host config changed:\n%s", cfg)
	}
	if got := h.git(t, "-C", h.dir, "tag", "-l"); got != "" {
		t.Errorf("host has tags from the Pod: %q", got)
	}
	pb.must(t, ctx, "rm", "-f", name)
	c.waitGone(t, ctx, ns)
}

// TestK8sLocalCloneRun: podbot run --repo PATH on the cluster starts the
// agent in its copy; what it commits there podbot fetch brings to the
// host once the run ends (the Pod is kept without --rm).
func TestK8sLocalCloneRun(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	h := newLCHost(t)
	pb := c.k8sLC(ns, h)
	pb.config = k8sRunConfig(`echo "cwd=$(pwd)"; echo "branch=$(git rev-parse --abbrev-ref HEAD)"
echo 'from the agent' >> a && git -c user.name=agent -c user.email=agent@example.com commit -qam 'run change' && echo committed`)
	pb.env = []string{"HOME=" + k8sHome(t, "lc-run")}
	r := pb.run(t, ctx, nil, "run", "--name", "lc-run", "--repo", h.dir)
	if r.Code != 0 {
		t.Fatalf("podbot run: exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{"cwd=/work/app\n", "branch=podbot/lc-run\n", "committed\n"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s\nstderr: %s", want, r.Stdout, r.Stderr)
		}
	}
	if !strings.Contains(r.Stderr, "podbot: workspace: copying "+h.dir) {
		t.Errorf("no copy step on stderr:\n%s", r.Stderr)
	}
	fetch := pb.must(t, ctx, "fetch", "--repo", h.dir, "lc-run").Stdout
	if !strings.Contains(fetch, "(1 commit(s)") {
		t.Errorf("fetch printed %q", fetch)
	}
	if msg := h.git(t, "-C", h.dir, "log", "-1", "--format=%s", "podbot/lc-run"); msg != "run change\n" {
		t.Errorf("host branch tip %q", msg)
	}
	pb.must(t, ctx, "rm", "-f", "lc-run")
	c.waitGone(t, ctx, ns)
	c.nothingLeft(t, ctx, ns)
	c.noSecrets(t, ctx, ns)
}

// lcHostAgent is an ACP agent (python3) that answers initialize, and on
// session/new works in its copy: it reports where it runs, commits a
// change and reports the commit in the result's _meta.
const lcHostAgent = `import json, subprocess, sys

def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
    elif msg.get("method") == "session/new":
        work = subprocess.run(["sh", "-c", "pwd; git rev-parse --abbrev-ref HEAD; cat b; echo 'from the hosted agent' >> a; git -c user.name=agent -c user.email=agent@example.com commit -qam 'hosted change'; git rev-parse HEAD"],
                              capture_output=True, text=True)
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "s1", "_meta": {"podbot.e2e/work": work.stdout, "podbot.e2e/err": work.stderr}}})
`

// TestK8sLocalCloneHost: podbot host --repo PATH on the cluster with an
// ACP client: the agent works in its private copy (/work/app on branch
// podbot/<name>) and commits there; once the client closes the session,
// podbot host keeps the Pod (its copy holds the work), podbot diff and log
// show the agent's commit, podbot fetch brings it to the host's branch,
// and the host's work tree, index, config and hooks are as they were.
// podbot rm -f then leaves nothing.
func TestK8sLocalCloneHost(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	h := newLCHost(t)
	pb := c.k8sLC(ns, h)
	pb.config = k8sHostConfig(lcHostAgent)
	base := strings.TrimSpace(h.git(t, "-C", h.dir, "rev-parse", "HEAD"))
	before := h.state(t)

	frames := []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work/app","mcpServers":[]}}`,
	}
	const name = "lc-host"
	lines, stderr := exchangeFrames(t, pb.cmd(t, ctx, "host", "--name", name, "--repo", h.dir), frames)
	var sess struct {
		ID     int `json:"id"`
		Result struct {
			Meta map[string]string `json:"_meta"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &sess); err != nil || sess.ID != 1 {
		t.Fatalf("session/new answer %q: %v\nstderr:\n%s", lines[1], err, stderr)
	}
	work := strings.Split(strings.TrimSpace(sess.Result.Meta["podbot.e2e/work"]), "\n")
	if len(work) != 4 || work[0] != "/work/app" || work[1] != "podbot/"+name || work[2] != "bee" || len(work[3]) != 40 {
		t.Fatalf("the agent's work in its copy: %q (stderr %q)\npodbot stderr:\n%s", work, sess.Result.Meta["podbot.e2e/err"], stderr)
	}
	tip := work[3]
	if !strings.Contains(stderr, "kept the sandbox") {
		t.Errorf("podbot host did not say it kept the sandbox:\n%s", stderr)
	}

	// The Pod is kept, running, for the review.
	pod, err := c.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the hosting Pod was not kept: %v", err)
	}
	if pod.Annotations["podbot.localclone.base"] != base || pod.Annotations["podbot.localclone.repo"] != h.dir {
		t.Errorf("annotations %v", pod.Annotations)
	}
	if diff := pb.must(t, ctx, "diff", "--repo", h.dir, name).Stdout; !strings.Contains(diff, "+from the hosted agent") {
		t.Errorf("diff:\n%s", diff)
	}
	if lg := pb.must(t, ctx, "log", "--repo", h.dir, name).Stdout; !strings.Contains(lg, "hosted change") {
		t.Errorf("log:\n%s", lg)
	}
	if fetch := pb.must(t, ctx, "fetch", "--repo", h.dir, name).Stdout; !strings.Contains(fetch, "podbot/"+name+" "+tip+" (1 commit(s)") {
		t.Errorf("fetch printed %q, want tip %s", fetch, tip)
	}
	if got := strings.TrimSpace(h.git(t, "-C", h.dir, "rev-parse", "refs/heads/podbot/"+name)); got != tip {
		t.Errorf("host branch at %s, want %s", got, tip)
	}
	// Nothing reached the host's work tree, index, config or hooks; its
	// checked-out branch did not move.
	if after := h.state(t); after != before {
		t.Errorf("the host repository changed:\n%s\nwas:\n%s", after, before)
	}
	if got := strings.TrimSpace(h.git(t, "-C", h.dir, "rev-parse", "HEAD")); got != base {
		t.Errorf("host HEAD moved to %s, want %s", got, base)
	}
	if a, _ := os.ReadFile(filepath.Join(h.dir, "a")); strings.Contains(string(a), "hosted agent") {
		t.Errorf("the agent's change reached the host's work tree: %q", a)
	}

	pb.must(t, ctx, "rm", "-f", name)
	c.waitGone(t, ctx, ns)
	c.nothingLeft(t, ctx, ns)
	c.noSecrets(t, ctx, ns)
}
