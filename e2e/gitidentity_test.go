//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/launchplan"
)

// TestGitIdentityWithoutExec: the host's git identity reaches the agent
// with no exec of its own: in the credentials upload for an image agent
// (HOME=/root) and a host-mount agent (the directory's owner,
// HOME=/home/podbot), and in the environment on a read-only root
// filesystem. `git config user.name` inside the sandbox, as the agent,
// gives it back, quotes and all.
func TestGitIdentityWithoutExec(t *testing.T) {
	identity := map[string]string{"user.name": `Ada "Countess" Lovelace \ 1815`, "user.email": "ada@example.invalid"}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(root, "proj")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	giveToAgent(t, project)

	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		conn := connectEngine(t, ctx, e)
		for _, tc := range []struct {
			purpose, home string
			hostMount     bool
			readOnly      bool
		}{
			{"gitid", "/root", false, false},
			{"gitidmount", launchplan.AgentHome, true, false},
			{"gitidro", "/root", false, true},
		} {
			cfg := launchConfig()
			cfg.Network.Mode = config.NetworkNone
			cfg.Sandbox.ReadOnlyRootfs = tc.readOnly
			opts := podbot.LaunchOptions{Config: cfg, Intent: launchplan.IntentInteractive, Name: testName(e, tc.purpose),
				GitConfig: func(key string) (string, error) { return identity[key], nil }}
			if tc.hostMount {
				opts.Config.Workspace.Source = config.SourceHostMount
				opts.Config.Workspace.AllowedRoots = []string{root}
				opts.HostPath = project
			}
			removeOnCleanup(t, e, opts.Name)
			sb := launch(t, ctx, conn, opts)
			if got := strings.TrimSpace(mustExecIn(t, ctx, conn, sb, "sh", "-c", `echo "$HOME"`)); got != tc.home {
				t.Errorf("%s: HOME = %q, want %q", tc.purpose, got, tc.home)
			}
			for key, want := range identity {
				if got := strings.TrimSuffix(mustExecIn(t, ctx, conn, sb, "git", "config", key), "\n"); got != want {
					t.Errorf("%s: git config %s = %q, want %q", tc.purpose, key, got, want)
				}
			}
			r := execIn(t, ctx, conn, sb, "test", "-e", tc.home+"/.gitconfig")
			if tc.readOnly == (r.code == 0) {
				t.Errorf("%s: %s/.gitconfig exists: %v (read-only root filesystem: %v)", tc.purpose, tc.home, r.code == 0, tc.readOnly)
			}
			if !tc.readOnly {
				// The agent may change its identity: the file is its own.
				mustExecIn(t, ctx, conn, sb, "git", "config", "--global", "user.name", "Changed")
			}
		}
	})
}
