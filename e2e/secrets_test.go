//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// secretAgent writes its environment to the workspace, then waits for the
// test's go-ahead file before exiting with status 3, so the test can look
// at the container while the agent runs. It leaves a process behind that
// would run for an hour if the container were not stopped.
const secretAgent = `#!/bin/sh
env > /workspace/agent-env.txt
sleep 3600 </dev/null >/dev/null 2>&1 &
i=0
while [ ! -e /workspace/go ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done
exit 3
`

// TestSecretEnvNeverInContainerConfig plays the attacker who can read the
// engine's view of a kept sandbox (docker/podman inspect, the engine's
// files on disk) after podbot run passed it an allowlisted API key: the
// key must not be there, while the agent still sees it. After the agent
// exits the kept container is stopped (its leftover process with it), and
// podbot start brings it back, still without the key in its config; podbot
// exec --agent-env hands the key to one command at exec time.
func TestSecretEnvNeverInContainerConfig(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		root, ws := stubWorkspace(t)
		if err := os.WriteFile(filepath.Join(ws, "secret-agent.sh"), []byte(secretAgent), 0o755); err != nil {
			t.Fatal(err)
		}
		name := testName(e, "secretenv")
		removeOnCleanup(t, e, name)
		secret := "sk-ant-podbot-e2e-" + suite.runID + "-do-not-leak"
		cfg := fmt.Sprintf(`image = "localhost/podbot-sandbox:latest"
[agent]
kind = "custom"
command = "/workspace/secret-agent.sh"
env_allowlist = ["E2E_AGENT_API_KEY"]
[creds]
copy_claude = false
copy_codex = false
[workspace]
allowed_roots = [%q]
`, root)
		env := newRunEnv(t, cfg, "E2E_AGENT_API_KEY="+secret)
		cmd := env.command(t, ctx, e, "run", "--name", name, "--workspace", ws)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan int, 1)
		go func() { done <- exitStatus(t, cmd.Wait(), cmd.Args) }()

		// (b) The agent sees the key.
		agentEnv := filepath.Join(ws, "agent-env.txt")
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
			if b, _ := os.ReadFile(agentEnv); bytes.Contains(b, []byte("\n")) {
				break
			}
			select {
			case code := <-done:
				t.Fatalf("podbot run ended (exit %d) before the agent reported\nstderr:\n%s", code, stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				t.Fatalf("the agent never reported\nstderr:\n%s", stderr.String())
			}
		}
		if b, _ := os.ReadFile(agentEnv); !strings.Contains(string(b), "E2E_AGENT_API_KEY="+secret) {
			t.Errorf("the agent does not see the allowlisted key:\n%s", b)
		}
		// (a) While the agent runs, nothing the engine shows holds the key.
		assertNotInInspect(t, ctx, e, name, secret, "while the agent runs")

		if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		select {
		case code := <-done:
			if code != 3 {
				t.Fatalf("podbot run exit %d, want the agent's 3\nstderr:\n%s", code, stderr.String())
			}
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			t.Fatalf("podbot run did not end after the agent exited\nstderr:\n%s", stderr.String())
		}
		if strings.Contains(stderr.String(), secret) || strings.Contains(stdout.String(), secret) {
			t.Errorf("podbot printed the key:\n%s%s", stdout.String(), stderr.String())
		}

		// (c) The kept container is stopped, and still holds no key.
		ins, err := e.API.ContainerInspect(ctx, name)
		if err != nil {
			t.Fatalf("the kept container is gone: %v\nstderr:\n%s", err, stderr.String())
		}
		if ins.State.Running {
			t.Errorf("the kept container is still %s after its agent exited; want it stopped", ins.State.Status)
		}
		assertNotInInspect(t, ctx, e, name, secret, "after the agent exited")
		assertNotOnDisk(t, ctx, e, ins.ID, secret)

		start := runPodbot(t, ctx, e, "start", name)
		if start.Code != 0 || strings.TrimSpace(start.Stdout) != name {
			t.Fatalf("podbot start %s: exit %d\nstdout: %s\nstderr: %s", name, start.Code, start.Stdout, start.Stderr)
		}
		if ins, err := e.API.ContainerInspect(ctx, name); err != nil || !ins.State.Running {
			t.Fatalf("after podbot start the container is not running: %v", err)
		}
		if out := mustExec(t, ctx, e, name, "sh", "-c", `for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c '^sleep 3600' || true`); strings.TrimSpace(out) != "0" {
			t.Errorf("the process the agent left behind survived the stop: %q", out)
		}
		if out := mustExec(t, ctx, e, name, "env"); strings.Contains(out, secret) {
			t.Errorf("a plain podbot exec after podbot start sees the key:\n%s", out)
		}
		withKey := env.command(t, ctx, e, "exec", "-T", "--agent-env", name, "--", "sh", "-c", `test "$E2E_AGENT_API_KEY" = "$1" && echo has-key`, "sh", secret)
		if out, err := withKey.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "has-key" {
			t.Errorf("podbot exec --agent-env: %v\n%s", err, out)
		}
		assertNotInInspect(t, ctx, e, name, secret, "after podbot start and exec --agent-env")
	})
}

// assertNotInInspect fails when the engine's container inspect, through
// the API and through the engine's own CLI, holds secret anywhere.
func assertNotInInspect(t *testing.T, ctx context.Context, e engineUnderTest, name, secret, when string) {
	t.Helper()
	_, raw, err := e.API.ContainerInspectWithRaw(ctx, name, false)
	if err != nil {
		t.Fatalf("inspect %s %s: %v", name, when, err)
	}
	if bytes.Contains(raw, []byte(secret)) {
		t.Errorf("%s: the Engine API's container inspect shows the key:\n%s", when, raw)
	}
	argv := append(engineCLIArgs(e), "container", "inspect", name)
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Logf("%s: %s: %v (CLI check skipped)\n%s", when, strings.Join(argv, " "), err, out)
		return
	}
	if bytes.Contains(out, []byte(secret)) {
		t.Errorf("%s: `%s` shows the key:\n%s", when, strings.Join(argv, " "), out)
	}
}

// assertNotOnDisk searches the engine's files for the container (its
// config, the OCI spec, exec session files) for secret, when the test can
// read them: the engine runs on this machine.
func assertNotOnDisk(t *testing.T, ctx context.Context, e engineUnderTest, id, secret string) {
	t.Helper()
	info, err := e.API.Info(ctx)
	if err != nil || info.DockerRootDir == "" {
		t.Logf("engine root unknown (%v); on-disk check skipped", err)
		return
	}
	var dirs []string
	if e.Name == "podman" {
		dirs = []string{filepath.Join(info.DockerRootDir, "overlay-containers", id), filepath.Join(info.DockerRootDir, "vfs-containers", id)}
	} else {
		dirs = []string{filepath.Join(info.DockerRootDir, "containers", id)}
	}
	searched := 0
	for _, dir := range dirs {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			if st, err := d.Info(); err != nil || st.Size() > 8<<20 {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			searched++
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("the engine's file %s holds the key", p)
			}
			return nil
		})
	}
	t.Logf("searched %d engine files for the key", searched)
}
