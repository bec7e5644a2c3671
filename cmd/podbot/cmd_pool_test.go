package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot/errdefs"
)

// The pool commands refuse bad input before touching an engine, naming
// the input and the fix.
func TestPoolUsageErrors(t *testing.T) {
	state := "XDG_STATE_HOME=" + t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"pool", "create", "Bad_Name", "--size", "2"}, exitUsage, "lower-case"},
		{[]string{"pool", "create", "p", "--size", "99"}, exitUsage, "0 to 64"},
		{[]string{"pool", "create", "p", "--size", "1", "--kind", "vm"}, exitUsage, "tools or agent"},
		{[]string{"pool", "create", "p"}, exitUsage, "size"},
		{[]string{"pool", "resize", "p", "x"}, exitUsage, "whole number"},
		{[]string{"pool", "resize", "p", "-1"}, exitUsage, "unknown shorthand"},
		{[]string{"pool", "resize", "nope", "2"}, exitConfig, "no pool named nope"},
		{[]string{"pool", "rm", "nope"}, exitConfig, "no pool named nope"},
		{[]string{"create", "--wait", "5s"}, exitUsage, "--wait needs --pool"},
		{[]string{"create", "--pool", "nope"}, exitConfig, "no pool named nope"},
		{[]string{"--backend", "kubernetes", "create", "--pool", "p"}, exitConfig, "no pool named p"},
		{[]string{"--backend", "kubernetes", "pool", "create", "p", "--size", "1"}, exitUsage, "use --kind agent"},
		{[]string{"tools", "call", "ls", "--wait", "5s"}, exitUsage, "--wait needs --pool"},
		{[]string{"tools", "call", "ls", "--pool", "../x"}, exitConfig, "lower-case"},
	} {
		if c.args[0] == "--backend" && !kubernetesBuild {
			continue // the lean podbot hands kubernetes commands to podbot-kube first
		}
		code, _, errOut := run(t, []string{state, "PODBOT_ENGINE_SOCKET=unix:///nonexistent.sock"}, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, want %d with %q\n%s", c.args, code, c.code, c.want, errOut)
		}
	}
}

func TestPoolDeclaredInConfigIsReadOnly(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(cfg, []byte("[[pools]]\nname = \"decl\"\nsize = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"XDG_STATE_HOME=" + dir, "PODBOT_CONFIG_PATH=" + cfg, "PODBOT_ENGINE_SOCKET=unix:///nonexistent.sock"}
	for _, args := range [][]string{{"pool", "resize", "decl", "3"}, {"pool", "rm", "decl"}} {
		code, _, errOut := run(t, env, args...)
		if code != exitConfig || !strings.Contains(errOut, "[[pools]]") {
			t.Errorf("%v: exit %d\n%s", args, code, errOut)
		}
	}
	code, _, errOut := run(t, env, "pool", "create", "decl", "--size", "1", "--no-fill")
	if code != exitConfig || !strings.Contains(errOut, "already exists") {
		t.Errorf("create over a declared pool: exit %d\n%s", code, errOut)
	}
}

// A pool belongs to the backend it was created on: the other backend
// neither claims from it nor changes it.
func TestPoolBackendSeparation(t *testing.T) {
	if !kubernetesBuild {
		t.Skip("the lean podbot hands kubernetes commands to podbot-kube")
	}
	env := []string{"XDG_STATE_HOME=" + t.TempDir(), "PODBOT_ENGINE_SOCKET=unix:///nonexistent.sock", "KUBECONFIG=/nonexistent"}
	if code, _, errOut := run(t, env, "pool", "create", "eng", "--size", "1", "--no-fill"); code != 0 {
		t.Fatalf("engine pool create: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := run(t, env, "--backend", "kubernetes", "pool", "create", "kub", "--kind", "agent", "--size", "1", "--no-fill"); code != 0 {
		t.Fatalf("kubernetes pool create: exit %d\n%s", code, errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "kubernetes", "pool", "resize", "eng", "2", "--no-fill"}, "on the engine backend"},
		{[]string{"--backend", "kubernetes", "create", "--pool", "eng"}, "on the engine backend"},
		{[]string{"pool", "resize", "kub", "2", "--no-fill"}, "on the kubernetes backend"},
		{[]string{"create", "--pool", "kub"}, "on the kubernetes backend"},
	} {
		code, _, errOut := run(t, env, c.args...)
		if code != exitConfig || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, want %d with %q\n%s", c.args, code, exitConfig, c.want, errOut)
		}
	}
}

// TestAwaitEngine: pool serve waits for an engine it cannot reach
// (retrying, each wait logged) instead of exiting, returns any other
// error at once, and stops waiting when its context ends.
func TestAwaitEngine(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	unreachable := &errdefs.ContainerError{Op: "ping", Reason: errdefs.ErrConnectionFailed, Msg: "connection reset by peer"}
	calls := 0
	got, err := awaitEngine(context.Background(), logger, time.Millisecond, func() (int, error) {
		calls++
		if calls < 3 {
			return 0, unreachable
		}
		return 7, nil
	})
	if err != nil || got != 7 || calls != 3 || strings.Count(logs.String(), "cannot reach the engine") != 2 {
		t.Fatalf("got %d, %v after %d calls\n%s", got, err, calls, logs.String())
	}
	bad := &errdefs.ConfigError{Key: "pool.state_dir", Reason: errdefs.ErrInvalidValue}
	calls = 0
	if _, err := awaitEngine(context.Background(), logger, time.Millisecond, func() (int, error) { calls++; return 0, bad }); !errors.Is(err, errdefs.ErrInvalidValue) || calls != 1 {
		t.Fatalf("a configuration error: %v after %d calls, want it at once", err, calls)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := awaitEngine(ctx, logger, time.Millisecond, func() (int, error) { return 0, unreachable }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an engine that never comes: %v, want the context's end", err)
	}
}
