package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
