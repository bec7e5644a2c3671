//go:build e2e

package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// TestCredsUploadPreservesModesAndSymlinks launches a sandbox with ~/.claude
// copied from a fake home and checks, inside the container, file modes,
// symlinks (an outside target is copied as a link, not followed), excluded
// caches and the git identity.
func TestCredsUploadPreservesModesAndSymlinks(t *testing.T) {
	home := t.TempDir()
	claude := filepath.Join(home, ".claude")
	for _, d := range []string{filepath.Join(claude, "bin"), filepath.Join(claude, "cache")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]os.FileMode{
		".credentials.json": 0o600,
		"bin/tool.sh":       0o755,
		"settings.json":     0o644,
		"cache/blob":        0o644,
	}
	for rel, mode := range files {
		p := filepath.Join(claude, rel)
		if err := os.WriteFile(p, []byte("content of "+rel+"\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	if err := os.Symlink("settings.json", filepath.Join(claude, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/hostname", filepath.Join(claude, "outside")); err != nil {
		t.Fatal(err)
	}

	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		conn := connectEngine(t, ctx, e)
		name := testName(e, "creds")
		removeOnCleanup(t, e, name)
		cfg := launchConfig()
		cfg.Network.Mode = config.NetworkNone // the upload needs no network, hence no egress proxy
		cfg.Creds.CopyClaude = true
		cfg.Creds.Exclude = []string{".claude/cache"}
		sb := launch(t, ctx, conn, podbot.LaunchOptions{
			Config: cfg, Intent: launchplan.IntentInteractive, Name: name, HostHome: home,
			GitConfig: func(key string) (string, error) {
				return map[string]string{"user.name": "Ada Lovelace", "user.email": "ada@example.invalid"}[key], nil
			},
		})
		stat := func(rel string) string {
			return strings.TrimSpace(mustExecIn(t, ctx, conn, sb, "stat", "-c", "%a %F", "/root/.claude/"+rel))
		}
		for rel, want := range map[string]string{
			".credentials.json": "600 regular file",
			"bin/tool.sh":       "755 regular file",
			"settings.json":     "644 regular file",
			"bin":               "755 directory",
			"link":              "777 symbolic link",
			"outside":           "777 symbolic link",
		} {
			if got := stat(rel); got != want {
				t.Errorf("/root/.claude/%s: %q, want %q", rel, got, want)
			}
		}
		if got := strings.TrimSpace(mustExecIn(t, ctx, conn, sb, "readlink", "/root/.claude/link")); got != "settings.json" {
			t.Errorf("link -> %q, want settings.json", got)
		}
		if got := strings.TrimSpace(mustExecIn(t, ctx, conn, sb, "readlink", "/root/.claude/outside")); got != "/etc/hostname" {
			t.Errorf("outside -> %q, want /etc/hostname (copied as a link)", got)
		}
		if got := mustExecIn(t, ctx, conn, sb, "cat", "/root/.claude/link"); got != "content of settings.json\n" {
			t.Errorf("reading through the link gave %q", got)
		}
		if r := execIn(t, ctx, conn, sb, "test", "-e", "/root/.claude/cache/blob"); r.code == 0 {
			t.Error("an excluded file was copied")
		}
		for key, want := range map[string]string{"user.name": "Ada Lovelace", "user.email": "ada@example.invalid"} {
			if got := strings.TrimSpace(mustExecIn(t, ctx, conn, sb, "git", "config", "--global", key)); got != want {
				t.Errorf("git %s = %q, want %q", key, got, want)
			}
		}
	})
}

// TestHostMountAllowedAndRefused mounts a directory inside an allowed root
// (it becomes the working directory, read-write) and refuses one outside
// it and a symlink escaping it, before any container is created.
func TestHostMountAllowedAndRefused(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	allowed := filepath.Join(base, "projects")
	project := filepath.Join(allowed, "proj")
	outside := filepath.Join(base, "private")
	for _, d := range []string{project, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(project, "hello.txt"), []byte("hello from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	giveToAgent(t, project)
	escape := filepath.Join(allowed, "escape")
	if err := os.Symlink(outside, escape); err != nil {
		t.Fatal(err)
	}

	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		conn := connectEngine(t, ctx, e)
		cfg := launchConfig()
		cfg.Workspace.Source = config.SourceHostMount
		cfg.Workspace.AllowedRoots = []string{allowed}
		cfg.Network.Mode = config.NetworkNone // the mount needs no network, hence no egress proxy

		name := testName(e, "mountok")
		removeOnCleanup(t, e, name)
		sb := launch(t, ctx, conn, podbot.LaunchOptions{Config: cfg, Intent: launchplan.IntentInteractive, Name: name, HostPath: project})
		if sb.Workspace != launchplan.DefaultHostMountTarget {
			t.Errorf("workspace %q, want %s", sb.Workspace, launchplan.DefaultHostMountTarget)
		}
		if got := mustExecIn(t, ctx, conn, sb, "cat", "hello.txt"); got != "hello from the host\n" {
			t.Errorf("hello.txt in the working directory: %q", got)
		}
		if got := strings.TrimSpace(mustExecIn(t, ctx, conn, sb, "pwd")); got != launchplan.DefaultHostMountTarget {
			t.Errorf("working directory %q, want %s", got, launchplan.DefaultHostMountTarget)
		}
		// A file of this engine's own: the other engine's subtest writes in
		// the same directory at the same time.
		written := "written-" + e.Name + ".txt"
		mustExecIn(t, ctx, conn, sb, "sh", "-c", "echo from the container > "+written)
		if b, err := os.ReadFile(filepath.Join(project, written)); err != nil || string(b) != "from the container\n" {
			t.Errorf("file written in the container, on the host: %q, %v", b, err)
		}

		for _, tc := range []struct{ purpose, path string }{
			{"mountout", outside},
			{"mountesc", escape},
			{"mountdots", filepath.Join(allowed, "..", "private")},
		} {
			name := testName(e, tc.purpose)
			removeOnCleanup(t, e, name)
			_, err := podbot.Launch(ctx, conn, podbot.LaunchOptions{Config: cfg, Intent: launchplan.IntentInteractive, Name: name, HostPath: tc.path})
			var se *podbot.StepError
			if !errors.As(err, &se) || se.Step != podbot.StepPlan || !errors.Is(err, errdefs.ErrRefused) {
				t.Errorf("host path %s: %v, want a refused %s step error", tc.path, err, podbot.StepPlan)
			}
			if rows := containersNamed(t, ctx, e, name); len(rows) != 0 {
				t.Errorf("host path %s was refused but %d container(s) exist", tc.path, len(rows))
			}
		}
	})
}
