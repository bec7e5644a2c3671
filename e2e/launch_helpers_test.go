//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
)

// sandboxImage is the image the library-level launch tests run.
const sandboxImage = "localhost/podbot-sandbox:latest"

// connectEngine opens a podbot engine connection to e, closed at cleanup.
func connectEngine(t *testing.T, ctx context.Context, e engineUnderTest) *engine.Conn {
	t.Helper()
	ep, err := engine.ParseEndpoint(e.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := engine.Connect(ctx, ep)
	if err != nil {
		t.Fatalf("connect to %s: %v", e.Endpoint, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// launchConfig is the default configuration with the local sandbox image
// and no credential copy.
func launchConfig() config.Config {
	cfg := config.Default()
	cfg.Image = sandboxImage
	cfg.Creds.CopyClaude, cfg.Creds.CopyCodex = false, false
	return cfg
}

// launch runs podbot.Launch and closes (removes) the sandbox at cleanup,
// before the engine connection closes.
func launch(t *testing.T, ctx context.Context, conn *engine.Conn, opts podbot.LaunchOptions) *podbot.Sandbox {
	t.Helper()
	opts.Progress = func(step, detail string) { t.Logf("launch %s: %s", step, detail) }
	sb, err := podbot.Launch(ctx, conn, opts)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sb.Close(cctx, true); err != nil {
			t.Errorf("close sandbox %s: %v", sb.Name, err)
		}
	})
	return sb
}

// execResult is what one exec in a sandbox did.
type execResult struct {
	code           int
	stdout, stderr string
}

// execIn runs argv in the sandbox as its plan's user.
func execIn(t *testing.T, ctx context.Context, conn *engine.Conn, sb *podbot.Sandbox, argv ...string) execResult {
	t.Helper()
	var out, errOut bytes.Buffer
	code, err := conn.Exec(ctx, sb.ID, engine.ExecOptions{Cmd: argv, User: sb.Plan.User, Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatalf("exec %v: %v", argv, err)
	}
	return execResult{code: code, stdout: out.String(), stderr: errOut.String()}
}

// mustExecIn runs argv in the sandbox and fails the test on a non-zero exit.
func mustExecIn(t *testing.T, ctx context.Context, conn *engine.Conn, sb *podbot.Sandbox, argv ...string) string {
	t.Helper()
	r := execIn(t, ctx, conn, sb, argv...)
	if r.code != 0 {
		t.Fatalf("exec %v: exit %d\nstdout: %s\nstderr: %s", argv, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// runtimeDir is a private stand-in for $XDG_RUNTIME_DIR, short enough for
// any path limits.
func runtimeDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// agentUID and agentGID own the host-mount workspaces the tests make: podbot
// runs a host-mount agent as the directory's owner and refuses a root-owned
// one, so a workspace made by the root-run suite is handed to this user.
const agentUID, agentGID = 1000, 1000

// giveToAgent chowns dir and everything the test put in it to the agent test
// user, leaving hard links alone (they are host binaries linked in, whose
// owner must not change).
func giveToAgent(t testing.TB, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && !d.IsDir() && st.Nlink > 1 {
			return nil
		}
		return os.Lchown(p, agentUID, agentGID)
	})
	if err != nil {
		t.Fatal(err)
	}
}
