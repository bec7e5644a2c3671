//go:build e2e

package e2e

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// mountedRepo makes a git repository under an allowed root, owned by the agent
// test user, with one commit; it returns the allowed root and the repository.
func mountedRepo(t *testing.T) (root, repo string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo = filepath.Join(root, "repo")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{
		{"git", "init", "-q", "-b", "main"},
		{"sh", "-c", "echo hello > README"},
		{"git", "add", "README"},
		{"git", "-c", "user.name=host", "-c", "user.email=host@example.com", "commit", "-q", "-m", "first"},
	} {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
	}
	giveToAgent(t, repo)
	return root, repo
}

// TestHostMountAttackerCannotEscalate plays a hostile agent in a host-mount
// sandbox on each engine: it tries to leave a setuid-root binary and
// root-owned files in the user's directory, to become root, and to plant
// code that git runs on the host (hooks, core.fsmonitor, core.hooksPath, a
// replaced .git). Every attempt must fail while ordinary work, commits
// included, still succeeds.
func TestHostMountAttackerCannotEscalate(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		root, repo := mountedRepo(t)
		conn := connectEngine(t, ctx, e)
		cfg := launchConfig()
		cfg.Workspace.Source = config.SourceHostMount
		cfg.Workspace.AllowedRoots = []string{root}
		cfg.Network.Mode = config.NetworkNone // the attack is on the mount; no network, no egress proxy
		name := testName(e, "attackmount")
		removeOnCleanup(t, e, name)
		sb := launch(t, ctx, conn, podbot.LaunchOptions{Config: cfg, Intent: launchplan.IntentInteractive, Name: name,
			HostPath: repo, HostHome: t.TempDir()})

		if got := strings.TrimSpace(mustExecIn(t, ctx, conn, sb, "id", "-u")); got != "1000" {
			t.Fatalf("the agent runs as uid %s, want the workspace owner 1000", got)
		}
		// A setuid copy of a shell: whatever the bits, it must not belong to root.
		execIn(t, ctx, conn, sb, "sh", "-c", "cp /bin/bash ./rootshell && chmod 4755 ./rootshell; chown 0:0 ./rootshell; chown 0:0 README")
		for _, f := range []string{"rootshell", "README"} {
			info, err := os.Lstat(filepath.Join(repo, f))
			if err != nil {
				t.Fatal(err)
			}
			st := info.Sys().(*syscall.Stat_t)
			if st.Uid == 0 || st.Gid == 0 {
				t.Errorf("%s on the host belongs to %d:%d; the agent made it root's", f, st.Uid, st.Gid)
			}
		}
		// Becoming root inside: no capability, no setuid helper.
		if r := execIn(t, ctx, conn, sb, "python3", "-c", "import os; os.setuid(0)"); r.code == 0 {
			t.Error("the agent became root with setuid(0)")
		}
		if r := execIn(t, ctx, conn, sb, "sh", "-c", "./rootshell -p -c 'id -u'"); strings.TrimSpace(r.stdout) == "0" {
			t.Error("a setuid shell made in the workspace ran as root")
		}

		// Code git would run on the host.
		attacks := []struct{ what, script string }{
			{"a post-checkout hook", "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout"},
			{"core.fsmonitor", "git config core.fsmonitor 'touch /tmp/pwned'"},
			{"core.hooksPath", "git config core.hooksPath /workspace/evil"},
			{"an appended config", "echo '[core] fsmonitor = touch /tmp/pwned' >> .git/config"},
			{"a replaced config", "cp .git/config /tmp/c && echo '[core] fsmonitor = x' >> /tmp/c && mv /tmp/c .git/config"},
			{"a renamed .git", "mv .git .git-old"},
			{"a removed hooks dir", "rm -rf .git/hooks"},
		}
		for _, a := range attacks {
			if r := execIn(t, ctx, conn, sb, "sh", "-c", a.script); r.code == 0 {
				t.Errorf("%s: the agent's attempt succeeded (%q)", a.what, a.script)
			}
		}
		entries, err := os.ReadDir(filepath.Join(repo, ".git", "hooks"))
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			if !strings.HasSuffix(en.Name(), ".sample") {
				t.Errorf("hook %s planted in the host repository", en.Name())
			}
		}
		if b, _ := os.ReadFile(filepath.Join(repo, ".git", "config")); strings.Contains(string(b), "fsmonitor") || strings.Contains(string(b), "hooksPath") {
			t.Errorf("host .git/config changed:\n%s", b)
		}

		// Ordinary work still works: edit, stage, commit.
		mustExecIn(t, ctx, conn, sb, "sh", "-c",
			"echo agent >> README && git add README && git -c user.name=agent -c user.email=agent@example.com commit -q -m 'from the agent'")
		out, err := exec.Command("git", "-c", "safe.directory=*", "-C", repo, "log", "--format=%s", "-1").Output()
		if err != nil || strings.TrimSpace(string(out)) != "from the agent" {
			t.Errorf("the agent's commit on the host: %q, %v", out, err)
		}
	})
}

// TestHostMountRefusesWhatLetsOut asks for mounts that would hand the sandbox
// a socket, the user's credentials or podbot's own secrets, or run the agent
// as root; each is refused before any container exists.
func TestHostMountRefusesWhatLetsOut(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		conn := connectEngine(t, ctx, e)
		root, repo := mountedRepo(t)
		home := filepath.Join(root, "home")
		if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
			t.Fatal(err)
		}
		sockDir := filepath.Join(root, "withsock")
		if err := os.MkdirAll(filepath.Join(sockDir, "deep"), 0o755); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("unix", filepath.Join(sockDir, "deep", "other-engine.sock"))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		giveToAgent(t, sockDir)
		keyDir := filepath.Join(root, "keys")
		if err := os.Mkdir(keyDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(keyDir, "app.pem"), []byte("key"), 0o600); err != nil {
			t.Fatal(err)
		}
		giveToAgent(t, keyDir)
		rootOwned := filepath.Join(root, "rootowned")
		if err := os.Mkdir(rootOwned, 0o755); err != nil {
			t.Fatal(err)
		}

		cfg := launchConfig()
		cfg.Workspace.Source = config.SourceHostMount
		cfg.Workspace.AllowedRoots = []string{root}
		cfg.GitHub.PrivateKeyPath = filepath.Join(keyDir, "app.pem")
		for _, tc := range []struct{ purpose, path, mention string }{
			{"mountsock", sockDir, "other-engine.sock"},
			{"mounthome", home, "home directory"},
			{"mountssh", filepath.Join(home, ".ssh"), ".ssh"},
			{"mountkey", keyDir, "private key"},
			{"mountroot", rootOwned, "belongs to root"},
		} {
			name := testName(e, tc.purpose)
			removeOnCleanup(t, e, name)
			_, err := podbot.Launch(ctx, conn, podbot.LaunchOptions{Config: cfg, Intent: launchplan.IntentInteractive,
				Name: name, HostPath: tc.path, HostHome: home})
			var se *podbot.StepError
			if !errors.As(err, &se) || se.Step != podbot.StepPlan || !errors.Is(err, errdefs.ErrRefused) ||
				!strings.Contains(err.Error(), tc.mention) {
				t.Errorf("host path %s: %v, want a refused %s step error naming %q", tc.path, err, podbot.StepPlan, tc.mention)
			}
			if rows := containersNamed(t, ctx, e, name); len(rows) != 0 {
				t.Errorf("host path %s was refused but %d container(s) exist", tc.path, len(rows))
			}
		}
		_ = repo
	})
}
