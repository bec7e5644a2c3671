//go:build !kubernetes

package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
)

// errExecCalled stands in for execve in tests: it returns, where the real
// one replaces the process.
var errExecCalled = errors.New("exec called")

// execCall is one recorded hand-over.
type execCall struct {
	path       string
	argv, env  []string
	called     bool
	executable string
}

// runHandOver runs podbot in-process as the binary dir/podbot, with a fake
// execve that records its call.
func runHandOver(t *testing.T, dir string, environ []string, args ...string) (int, string, *execCall) {
	t.Helper()
	ios, _, errOut := testIO()
	home := t.TempDir()
	env := append([]string{"HOME=" + home, "XDG_RUNTIME_DIR=" + home}, environ...)
	f := newFactory(ios, env)
	call := &execCall{executable: filepath.Join(dir, "podbot")}
	f.handOver = handOver{argv0: "podbot", args: args,
		executable: func() (string, error) { return call.executable, nil },
		exec: func(path string, argv, env []string) error {
			call.path, call.argv, call.env, call.called = path, argv, env, true
			return errExecCalled
		}}
	code := execute(context.Background(), f, args)
	return code, errOut.String(), call
}

// installDir is a directory holding an executable podbot and podbot-kube.
func installDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"podbot", companionName} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestHandOverServedCommandsOnKubernetes(t *testing.T) {
	dir := installDir(t)
	cfg := emptyConfig(t)
	cfgFile := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfgFile, []byte("[sandbox]\nbackend = \"kubernetes\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  []string
		args []string
	}{
		{[]string{cfg}, []string{"--backend", "kubernetes", "ps", "--json"}},
		{[]string{cfg}, []string{"ps", "--backend=kubernetes", "-a"}},
		{[]string{cfg, "PODBOT_SANDBOX_BACKEND=kubernetes"}, []string{"exec", "-t", "p", "--", "sh", "-c", "exit 3"}},
		{[]string{"PODBOT_CONFIG_PATH=" + cfgFile}, []string{"create", "--network", "none"}},
		{[]string{cfg}, []string{"--backend", "kubernetes", "logs", "-f", "p"}},
		{[]string{cfg}, []string{"--backend", "kubernetes", "rm", "-f", "p", "q"}},
		{[]string{cfg}, []string{"--backend", "kubernetes", "ps", "--size"}},
		{[]string{cfg}, []string{"--backend", "kubernetes", "run", "--rm", "--agent", "custom"}},
		{[]string{cfg, "PODBOT_SANDBOX_BACKEND=kubernetes"}, []string{"host", "--agent", "custom", "--agent-mode", "acp"}},
		{[]string{cfg, "PODBOT_SANDBOX_BACKEND=kubernetes"}, []string{"tools", "call", "--backend", "container", "read_file"}},
		{[]string{cfg}, []string{"tools", "serve", "--backend", "kubernetes"}},
		{[]string{cfg}, []string{"tools", "call", "ls", "--backend=Kubernetes"}},
		{[]string{"PODBOT_CONFIG_PATH=" + cfgFile}, []string{"tools", "list"}},
		{[]string{cfg}, []string{"--backend", "kubernetes", "doctor", "--json"}},
	} {
		code, errOut, call := runHandOver(t, dir, tc.env, tc.args...)
		if !call.called {
			t.Errorf("%v: not handed over (exit %d, stderr %q)", tc.args, code, errOut)
			continue
		}
		if want := filepath.Join(dir, companionName); call.path != want {
			t.Errorf("%v: exec %q, want %q", tc.args, call.path, want)
		}
		if want := append([]string{"podbot"}, tc.args...); !slices.Equal(call.argv, want) {
			t.Errorf("argv %q, want %q", call.argv, want)
		}
		if !slices.Equal(call.env[2:], tc.env) {
			t.Errorf("%v: environment %q changed", tc.args, call.env)
		}
		if code != exitFilesystem || !strings.Contains(errOut, "could not be started") {
			t.Errorf("%v: a failed exec: exit %d, stderr %q", tc.args, code, errOut)
		}
	}
}

func TestNoHandOverOffKubernetesOrUnserved(t *testing.T) {
	dir := installDir(t)
	cfg := emptyConfig(t)
	cfgFile := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfgFile, []byte("[sandbox]\nbackend = \"kubernetes\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  []string
		args []string
	}{
		{[]string{cfg}, []string{"version"}},
		{[]string{cfg, "PODBOT_SANDBOX_BACKEND=kubernetes"}, []string{"version"}},
		{[]string{cfg}, []string{"--backend", "kubernetes", "config", "show"}},
		{[]string{cfg}, []string{"--backend", "kubernetes", "start", "p"}},
		{[]string{cfg}, []string{"--backend", "kubernetes", "stop", "p"}},
		{[]string{cfg}, []string{"--backend", "kubernetes", "ps", "--help"}},
		{[]string{cfg}, []string{"--backend", "nope", "ps"}},
		{[]string{cfg, "PODBOT_ENGINE_SOCKET=unix:///nonexistent/podbot.sock"}, []string{"--backend", "engine", "ps"}},
		{[]string{cfg, "PODBOT_ENGINE_SOCKET=unix:///nonexistent/podbot.sock", "PODBOT_SANDBOX_BACKEND=kubernetes"}, []string{"--backend", "engine", "ps"}},
	} {
		if code, errOut, call := runHandOver(t, dir, tc.env, tc.args...); call.called {
			t.Errorf("%v: handed over (exit %d, stderr %q)", tc.args, code, errOut)
		}
	}
}

func TestHandOverMissingCompanion(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "podbot"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	code, errOut, call := runHandOver(t, dir, []string{emptyConfig(t)}, "--backend", "kubernetes", "ps")
	if call.called || code != exitFilesystem || !strings.Contains(errOut, filepath.Join(dir, companionName)) || !strings.Contains(errOut, "make build") {
		t.Errorf("missing companion: called %v, exit %d, stderr %q", call.called, code, errOut)
	}
}

// TestDoctorWithoutCompanionRunsHere: doctor is handed over when it can
// be, and otherwise runs in podbot and reports the missing companion.
func TestDoctorWithoutCompanionRunsHere(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "podbot"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{emptyConfig(t), "PODBOT_ENGINE_SOCKET=unix:///nonexistent/podbot.sock"}
	ios, out, _ := testIO()
	home := t.TempDir()
	f := newFactory(ios, append([]string{"HOME=" + home, "XDG_RUNTIME_DIR=" + home}, env...))
	called := false
	f.handOver = handOver{argv0: "podbot", args: []string{"--backend", "kubernetes", "doctor"},
		executable: func() (string, error) { return filepath.Join(dir, "podbot"), nil },
		exec:       func(string, []string, []string) error { called = true; return errExecCalled }}
	code := execute(context.Background(), f, []string{"--backend", "kubernetes", "doctor"})
	if called || code == exitFilesystem || !strings.Contains(out.String(), "its companion binary cannot be used") {
		t.Errorf("doctor without a companion: handed over %v, exit %d, stdout %q", called, code, out.String())
	}
}

func TestKubeServedCoversTheBackend(t *testing.T) {
	// Every entry point of the backend is a stub here; a command that
	// reaches one was not handed over.
	for name, stub := range map[string]error{
		"create":       createOnKubernetes(context.Background(), nil, nil, config.Config{}),
		"exec":         execOnKubernetes(context.Background(), nil, nil),
		"rm":           rmOnKubernetes(context.Background(), nil, nil),
		"logs":         logsOnKubernetes(context.Background(), nil, nil),
		"prune":        pruneOnKubernetes(context.Background(), nil, nil),
		"token-daemon": tokenDaemonOnKubernetes(context.Background(), nil, nil, podbot.TokenDaemonOptions{}),
	} {
		if !kubeServed[name] || stub == nil {
			t.Errorf("%s: served %v, stub error %v", name, kubeServed[name], stub)
		}
	}
	if _, err := psOnKubernetes(context.Background(), nil, nil); !kubeServed["ps"] || err == nil {
		t.Errorf("ps: served %v, stub error %v", kubeServed["ps"], err)
	}
	if _, err := runOnKubernetes(context.Background(), nil, podbot.RunOptions{}); !kubeServed["run"] || err == nil {
		t.Errorf("run: served %v, stub error %v", kubeServed["run"], err)
	}
	if _, err := hostOnKubernetes(context.Background(), nil, podbot.HostOptions{}); !kubeServed["host"] || err == nil {
		t.Errorf("host: served %v, stub error %v", kubeServed["host"], err)
	}
	if _, err := openKubeReview(context.Background(), nil, "", ""); err == nil {
		t.Errorf("review: stub error %v", err)
	}
	for _, name := range []string{"diff", "log", "fetch", "apply"} {
		if !kubeServed[name] {
			t.Errorf("%s is not handed over", name)
		}
	}
	if _, err := openKubeToolSession(context.Background(), nil, podbot.ToolSessionOptions{}); !kubeServed["tools"] || err == nil {
		t.Errorf("tools: served %v, stub error %v", kubeServed["tools"], err)
	}
}
