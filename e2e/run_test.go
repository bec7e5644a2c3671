//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stubAgent reports what it sees into the workspace, prints a marker and
// exits with status 7.
const stubAgent = `#!/bin/sh
{
	if test -t 0; then echo tty=yes; else echo tty=no; fi
	echo "cwd=$(pwd)"
	# The engine may apply the terminal's size just after the exec starts.
	for i in 1 2 3 4 5 6 7 8 9 10; do
		size=$(stty size 2>/dev/null)
		[ -n "$size" ] && [ "$size" != "0 0" ] && break
		sleep 0.2
	done
	echo "size=$size"
} > /workspace/report.txt
env > /workspace/env.txt
echo podbot-stub-agent-ready
exit 7
`

// stubWorkspace makes a host-mount workspace under a fresh allowed root
// holding the stub agent, and returns the root and the workspace.
func stubWorkspace(t *testing.T) (root, ws string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws = filepath.Join(root, "project")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "stub-agent.sh"), []byte(stubAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	giveToAgent(t, ws)
	return root, ws
}

// TestRunStubAgentOnTerminal runs a stub agent under podbot run in a real
// pseudo-terminal: it sees a TTY of the terminal's size, only allowlisted
// host variables, the workspace as its working directory, and its exit
// status becomes podbot's. The container is kept, stopped, and listed by
// podbot ps -a.
func TestRunStubAgentOnTerminal(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		root, ws := stubWorkspace(t)
		name := testName(e, "runstub")
		removeOnCleanup(t, e, name)
		allowed, secret := "allowed-"+suite.runID, "secret-"+suite.runID
		cfg := fmt.Sprintf(`image = "localhost/podbot-sandbox:latest"
[agent]
kind = "custom"
command = "/workspace/stub-agent.sh"
env_allowlist = ["STUB_ALLOWED"]
[creds]
copy_claude = false
copy_codex = false
[workspace]
allowed_roots = [%q]
`, root)
		env := newRunEnv(t, cfg, "STUB_ALLOWED="+allowed, "STUB_SECRET="+secret)
		cmd := env.command(t, ctx, e, "run", "--name", name, "--workspace", ws)
		p := startOnPTY(t, cmd, 31, 97)
		code := p.wait(t, 2*time.Minute)
		out := p.out.String()
		if code != 7 {
			t.Fatalf("podbot run exit %d, want the agent's 7; output:\n%s", code, out)
		}
		for _, want := range []string{"podbot: plan:", "podbot: create: " + name, "podbot: agent: /workspace/stub-agent.sh (terminal)", "podbot-stub-agent-ready", "kept"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "^@") || strings.Contains(out, "\x00") {
			t.Errorf("stray NUL reached the agent's terminal:\n%q", out)
		}
		report, err := os.ReadFile(filepath.Join(ws, "report.txt"))
		if err != nil {
			t.Fatalf("the stub left no report: %v; output:\n%s", err, out)
		}
		for _, want := range []string{"tty=yes", "cwd=/workspace", "size=31 97"} {
			if !strings.Contains(string(report), want) {
				t.Errorf("report lacks %q:\n%s", want, report)
			}
		}
		envOut, err := os.ReadFile(filepath.Join(ws, "env.txt"))
		if err != nil {
			t.Fatal(err)
		}
		checkOnlyAllowlisted(t, string(envOut), cmd.Env, "STUB_ALLOWED="+allowed, secret)

		// The kept container is stopped: podbot ps -a lists it, podbot ps does not.
		ps := runPodbot(t, ctx, e, "ps", "-a")
		if ps.Code != 0 || !strings.Contains(ps.Stdout, name) {
			t.Errorf("podbot ps -a does not list the kept container %s (exit %d):\n%s%s", name, ps.Code, ps.Stdout, ps.Stderr)
		}
		if running := runPodbot(t, ctx, e, "ps"); strings.Contains(running.Stdout, name) {
			t.Errorf("the kept container %s is still running after its agent exited:\n%s", name, running.Stdout)
		}
		if rm := runPodbot(t, ctx, e, "rm", "-f", name); rm.Code != 0 {
			t.Errorf("podbot rm -f %s: exit %d\n%s", name, rm.Code, rm.Stderr)
		}
		if left := env.leftovers(t); len(nonEmpty(left)) > 0 {
			t.Errorf("podbot run left files behind: %v", left)
		}
	})
}

// checkOnlyAllowlisted fails when the agent's environment holds a host
// variable (name and value) other than the allowlisted one, or the secret's
// value anywhere.
func checkOnlyAllowlisted(t *testing.T, agentEnv string, hostEnv []string, allowed, secret string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(agentEnv), "\n")
	have := map[string]bool{}
	for _, l := range lines {
		have[l] = true
	}
	if !have[allowed] {
		t.Errorf("agent env lacks the allowlisted %s:\n%s", allowed, agentEnv)
	}
	if strings.Contains(agentEnv, secret) {
		t.Errorf("agent env holds the unlisted variable's value %q:\n%s", secret, agentEnv)
	}
	// Variables every container has on its own, whatever the host says.
	own := map[string]bool{"PATH": true, "HOME": true, "TERM": true, "HOSTNAME": true, "PWD": true, "SHLVL": true, "_": true, "container": true}
	for _, kv := range hostEnv {
		k, v, _ := strings.Cut(kv, "=")
		if own[k] || len(v) < 4 || kv == allowed {
			continue
		}
		if have[kv] {
			t.Errorf("host variable %s reached the agent without being allowlisted", k)
		}
	}
}

// nonEmpty drops directories that are empty (a runtime parent directory
// may stay; what must go is every token directory and file).
func nonEmpty(paths []string) []string {
	var out []string
	for _, p := range paths {
		if entries, err := os.ReadDir(p); err == nil && len(entries) == 0 {
			continue
		}
		out = append(out, p)
	}
	return out
}

// TestRunInterruptedLeavesNothing interrupts podbot run (SIGINT, as Ctrl-C
// sends) right after each progress line, through a real GitHub-clone
// launch with a token, and checks that no container with the run's name,
// no token directory and no temporary file is left.
func TestRunInterruptedLeavesNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		ghCfg, gh := githubSection(t)
		repos := t.TempDir()
		newHostRepo(t, repos, "acme/sample", "feature")
		srv := startGitServer(t, ctx, e, repos, gh.Valid)
		cfg := fmt.Sprintf(`image = "localhost/podbot-sandbox:latest"
[agent]
kind = "custom"
command = "sleep"
args = ["300"]
[creds]
copy_claude = false
copy_codex = false
%s
clone_base_url = %q
`, ghCfg, srv.BaseURL)

		reachedAgent := false
		for k := 1; k <= 12 && !reachedAgent; k++ {
			name := testName(e, fmt.Sprintf("runint%d", k))
			removeOnCleanup(t, e, name)
			env := newRunEnv(t, cfg)
			cmd := env.command(t, ctx, e, "run", "--name", name, "--repo", "acme/sample", "--branch", "feature")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
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
			reachedAgent = strings.HasPrefix(last, "podbot: agent:")
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			code := exitStatus(t, cmd.Wait(), cmd.Args)
			all, _ := lines.waitLines("\x00never", 1, 5*time.Second)
			if code == 0 {
				t.Errorf("run %d (interrupted after %q): exit 0, want a failure", k, last)
			}
			if rows := containersNamed(t, ctx, e, name); len(rows) > 0 {
				t.Errorf("run %d (interrupted after %q): container %s left behind (%s)\n%s", k, last, name, rows[0].State, joinLines(all))
			}
			if left := nonEmpty(env.leftovers(t)); len(left) > 0 {
				t.Errorf("run %d (interrupted after %q): left behind %v", k, last, left)
			}
			t.Logf("run %d: interrupted after %q: exit %d, nothing left", k, last, code)
		}
		if !reachedAgent {
			t.Fatal("no run reached the agent step")
		}
	})
}

func lastWithPrefix(ls []timedLine, prefix string) string {
	last := ""
	for _, l := range ls {
		if strings.HasPrefix(l.text, prefix) {
			last = l.text
		}
	}
	return last
}
