//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/localclone"
)

// TestLocalCloneLaunch runs the launch podbot run and podbot host share
// with a local repository on each engine, as a non-root agent user: the
// copy is the agent's working directory, belongs to that user, sits on
// branch podbot/<name> at the host's HEAD, and the labels record it.
func TestLocalCloneLaunch(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		conn := connectEngine(t, ctx, e)
		h := newLCHost(t)
		head := strings.TrimSpace(h.git(t, "-C", h.dir, "rev-parse", "HEAD"))
		cfg := launchConfig()
		cfg.Sandbox.User = "4242:4242"
		name := testName(e, "lc-launch")
		sb := launch(t, ctx, conn, podbot.LaunchOptions{Config: cfg, Intent: launchplan.IntentInteractive, Name: name,
			LocalClone: &podbot.LocalCloneOptions{Path: h.dir}, Environ: h.env(), SidecarPath: sidecarBin(t), RuntimeDir: runtimeDir(t)})
		if sb.Workspace != "/work/app" {
			t.Errorf("workspace %q, want /work/app", sb.Workspace)
		}
		got := mustExecIn(t, ctx, conn, sb, "sh", "-c", "cd /work/app && pwd; stat -c %u:%g . .git; git rev-parse HEAD; git symbolic-ref HEAD; echo x > new && git add new && echo ok")
		want := "/work/app\n4242:4242\n4242:4242\n" + head + "\nrefs/heads/podbot/" + name + "\nok\n"
		if got != want {
			t.Errorf("copy in the sandbox:\n%s\nwant:\n%s", got, want)
		}
		if l := sb.Plan.Labels; l[localclone.LabelRepo] != h.dir || l[localclone.LabelBase] != head || l[localclone.LabelBranch] != "podbot/"+name {
			t.Errorf("labels %v", l)
		}
		if got := strings.TrimSpace(h.git(t, "-C", h.dir, "rev-parse", localclone.BaseRef(name))); got != head {
			t.Errorf("host base ref %q", got)
		}
	})
}

// TestLocalCloneHostKeepsSandbox: podbot host --repo PATH with an ACP
// client; the agent commits in its copy, and once the client closes the
// session the sandbox is kept (stopped, as podbot run without --rm keeps
// it), so podbot start, diff and fetch bring the work to the host; the
// host's work tree, config and hooks are untouched.
func TestLocalCloneHostKeepsSandbox(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		h := newLCHost(t)
		name := testName(e, "lchost")
		removeOnCleanup(t, e, name)
		before := h.state(t)
		cmd := podbotCmd(t, ctx, e, k8sHostConfig(lcHostAgent)+"[network]\nmode = \"none\"\n", "host", "--name", name, "--repo", h.dir)
		cmd.Env = append(h.env(), "PODBOT_CONFIG_PATH="+cmd.Env[len(cmd.Env)-1][len("PODBOT_CONFIG_PATH="):])
		cmd.Dir = h.dir
		lines, stderr := exchangeFrames(t, cmd, []string{
			`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work/app","mcpServers":[]}}`,
		})
		var sess struct {
			Result struct {
				Meta map[string]string `json:"_meta"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(lines[1]), &sess); err != nil {
			t.Fatalf("session/new answer %q: %v", lines[1], err)
		}
		work := strings.Split(strings.TrimSpace(sess.Result.Meta["podbot.e2e/work"]), "\n")
		if len(work) != 4 || work[0] != "/work/app" || work[1] != "podbot/"+name || len(work[3]) != 40 {
			t.Fatalf("the agent's work: %q (%q)\npodbot stderr:\n%s", work, sess.Result.Meta["podbot.e2e/err"], stderr)
		}
		if !strings.Contains(stderr, "kept the sandbox") {
			t.Errorf("podbot host did not say it kept the sandbox:\n%s", stderr)
		}
		h.mustPodbot(t, ctx, e, "start", name)
		if diff := h.mustPodbot(t, ctx, e, "diff", name).Stdout; !strings.Contains(diff, "+from the hosted agent") {
			t.Errorf("diff:\n%s", diff)
		}
		if fetch := h.mustPodbot(t, ctx, e, "fetch", name).Stdout; !strings.Contains(fetch, work[3]) {
			t.Errorf("fetch printed %q, want tip %s", fetch, work[3])
		}
		if after := h.state(t); after != before {
			t.Errorf("the host repository changed:\n%s\nwas:\n%s", after, before)
		}
		h.mustPodbot(t, ctx, e, "rm", "-f", name)
	})
}
