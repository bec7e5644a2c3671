//go:build e2e

package e2e

import (
	"context"
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
