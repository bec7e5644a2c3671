package podbot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// TestRunTokenDaemonStopsForStoppedContainer: a container that stops (it
// still exists) gets no more tokens and its token directory goes.
func TestRunTokenDaemonStopsForStoppedContainer(t *testing.T) {
	f, conn := newTokenEngine(t, fakeCtr{id: strings.Repeat("a", 64), name: "podbot-claude-kept", labels: tokenLabels})
	runtime := t.TempDir()
	done := make(chan error, 1)
	go func() {
		done <- RunTokenDaemon(context.Background(), conn, TokenDaemonOptions{
			Container: "podbot-claude-kept", RuntimeDir: runtime, Source: &countingSource{}, CheckInterval: 5 * time.Millisecond,
		})
	}()
	file := filepath.Join(runtime, "podbot", "podbot-claude-kept", "ghapp_token")
	waitForFile(t, file)
	f.setState("podbot-claude-kept", "exited")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("daemon returned %v after its container stopped, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the daemon kept running for a stopped container")
	}
	if _, err := os.Stat(filepath.Dir(file)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("token directory of a stopped container left behind: %v", err)
	}
}

// TestRunTokenDaemonAllFollowsRunningState: with --all a stopped
// container loses its token directory, and a container started again is
// served again with a fresh token.
func TestRunTokenDaemonAllFollowsRunningState(t *testing.T) {
	f, conn := newTokenEngine(t, fakeCtr{id: strings.Repeat("b", 64), name: "kept", labels: tokenLabels})
	runtime := t.TempDir()
	src := &countingSource{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunTokenDaemon(ctx, conn, TokenDaemonOptions{
			All: true, RuntimeDir: runtime, Source: src,
			CheckInterval: 5 * time.Millisecond, ListInterval: 5 * time.Millisecond,
		})
	}()
	defer func() {
		cancel()
		<-done
	}()
	dir := filepath.Join(runtime, "podbot", "kept")
	waitForFile(t, filepath.Join(dir, "ghapp_token"))
	f.setState("kept", "exited")
	waitGone(t, dir)
	f.setState("kept", "running")
	waitForFile(t, filepath.Join(dir, "ghapp_token"))
	src.mu.Lock()
	n := src.n
	src.mu.Unlock()
	if n < 2 {
		t.Errorf("minted %d tokens; a restarted container must get a fresh one", n)
	}
}

func waitGone(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return
		}
	}
	t.Fatalf("%s is still there", path)
}

func TestStartWritesAFreshTokenBeforeStarting(t *testing.T) {
	f, conn := newTokenEngine(t, fakeCtr{id: strings.Repeat("c", 64), name: "kept", labels: tokenLabels, state: "exited"})
	runtime := t.TempDir()
	file := filepath.Join(runtime, "podbot", "kept", "ghapp_token")
	var atStart []byte
	f.onStart = func(string) { atStart, _ = os.ReadFile(file) }
	res, err := Start(context.Background(), conn, "kept", StartOptions{RuntimeDir: runtime, TokenSource: &countingSource{}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TokenMount || !res.TokenWritten || res.WasRunning || res.Container.Name != "kept" {
		t.Errorf("result %+v", res)
	}
	if !strings.HasPrefix(string(atStart), "ghs_test") {
		t.Errorf("token file when the engine started the container: %q, want a fresh token", atStart)
	}
	if !slices.Equal(f.starts, []string{"kept"}) {
		t.Errorf("starts %v", f.starts)
	}
	// Starting a running container does nothing.
	res, err = Start(context.Background(), conn, "kept", StartOptions{RuntimeDir: runtime})
	if err != nil || !res.WasRunning || len(f.starts) != 1 {
		t.Errorf("second start: %+v, %v, starts %v", res, err, f.starts)
	}
}

func TestStartWithoutGitHubAppMakesAnEmptyDir(t *testing.T) {
	_, conn := newTokenEngine(t, fakeCtr{id: strings.Repeat("d", 64), name: "kept", labels: tokenLabels, state: "exited"})
	runtime := t.TempDir()
	res, err := Start(context.Background(), conn, "kept", StartOptions{RuntimeDir: runtime})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TokenMount || res.TokenWritten {
		t.Errorf("result %+v", res)
	}
	entries, err := os.ReadDir(filepath.Join(runtime, "podbot", "kept"))
	if err != nil || len(entries) != 0 {
		t.Errorf("token dir %v, %v; want an empty directory", entries, err)
	}
	if _, err := Start(context.Background(), conn, "kept", StartOptions{}); err != nil {
		t.Errorf("a running container needs no runtime dir: %v", err)
	}
}

func TestStartFailureRemovesTheToken(t *testing.T) {
	f, conn := newTokenEngine(t,
		fakeCtr{id: strings.Repeat("e", 64), name: "kept", labels: tokenLabels, state: "exited"},
		fakeCtr{id: strings.Repeat("f", 64), name: "plain", labels: plainLabels, state: "exited"},
	)
	f.failStart = true
	runtime := t.TempDir()
	_, err := Start(context.Background(), conn, "kept", StartOptions{RuntimeDir: runtime, TokenSource: &countingSource{}})
	if err == nil {
		t.Fatal("a failed engine start returned no error")
	}
	if _, err := os.Stat(filepath.Join(runtime, "podbot", "kept")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("token directory left after a failed start: %v", err)
	}
	f.failStart = false
	if _, err := Start(context.Background(), conn, "kept", StartOptions{}); !errors.Is(err, errdefs.ErrMissingRequired) {
		t.Errorf("token container without XDG_RUNTIME_DIR: %v, want a missing-required config error", err)
	}
	res, err := Start(context.Background(), conn, "plain", StartOptions{})
	if err != nil || res.TokenMount {
		t.Errorf("a container without a token mount: %+v, %v", res, err)
	}
}

// TestLaunchRequestKeepsSecretsForTheAgent: allowlisted values go to the
// agent's environment only, never to the container's, and the redactor
// learns them, so a logged exec request does not show them.
func TestLaunchRequestKeepsSecretsForTheAgent(t *testing.T) {
	_, conn := newTokenEngine(t)
	const secret = "sk-live-0123456789abcdef"
	cfg := config.Config{Image: "img"}
	cfg.Agent.Kind = "claude"
	cfg.Agent.EnvAllowlist = []string{"ANTHROPIC_API_KEY"}
	red := creds.NewRedactor()
	req, _, err := launchRequest(conn, LaunchOptions{Config: cfg, Intent: launchplan.IntentInteractive,
		Environ: []string{"ANTHROPIC_API_KEY=" + secret, "HOME=/root"}, Redactor: red})
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Env) != 0 || !slices.Equal(req.AgentEnv, []string{"ANTHROPIC_API_KEY=" + secret}) {
		t.Fatalf("Env %v, AgentEnv %v", req.Env, req.AgentEnv)
	}
	plan, err := launchplan.Normalize(req)
	if err != nil {
		t.Fatal(err)
	}
	c, hc, _ := plan.Render()
	body, _ := json.Marshal([]any{c, hc})
	if strings.Contains(string(body), secret) {
		t.Errorf("the create request holds the secret: %s", body)
	}
	exec, _ := plan.AgentExec()
	if !slices.Contains(exec.Env, "ANTHROPIC_API_KEY="+secret) {
		t.Errorf("the agent's exec lacks the variable: %v", exec.Env)
	}
	var logged bytes.Buffer
	logger := slog.New(creds.NewRedactingHandler(slog.NewJSONHandler(&logged, nil), red))
	logger.Info("exec create", "request", exec, "env", exec.Env)
	if strings.Contains(logged.String(), secret) || !strings.Contains(logged.String(), "ANTHROPIC_API_KEY") {
		t.Errorf("logged exec request: %s", logged.String())
	}
}
