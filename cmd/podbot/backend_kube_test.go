//go:build kubernetes

package main

import (
	"strings"
	"testing"
)

func TestKubernetesExecRefusesEnvAndUser(t *testing.T) {
	env := []string{emptyConfig(t), "KUBECONFIG=/nonexistent"}
	for _, args := range [][]string{
		{"--backend", "kubernetes", "exec", "-e", "K=V", "p", "--", "true"},
		{"--backend", "kubernetes", "exec", "--agent-env", "p", "--", "true"},
		{"--backend", "kubernetes", "exec", "-u", "0", "p", "--", "true"},
		{"--backend", "kubernetes", "stop", "p"},
		{"--backend", "kubernetes", "ps", "--size"},
	} {
		code, _, errOut := run(t, env, args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, stderr %q; want a usage error", args, code, errOut)
		}
	}
	code, _, errOut := run(t, env, "--backend", "kubernetes", "ps")
	if code != exitConfig || !strings.Contains(errOut, "kubernetes.kubeconfig") {
		t.Errorf("ps without a kubeconfig: exit %d, stderr %q", code, errOut)
	}
}

func TestKubernetesToolsRefusesHostMountsAndNeedsAKubeconfig(t *testing.T) {
	env := []string{emptyConfig(t), "KUBECONFIG=/nonexistent", "PODBOT_SIDECAR_PATH=/bin/true"}
	code, _, errOut := run(t, env, "--backend", "kubernetes", "tools", "call", "ls", "--mount", t.TempDir())
	if code != exitUsage || !strings.Contains(errOut, "--mount") || !strings.Contains(errOut, "Pod") {
		t.Errorf("--mount: exit %d, stderr %q", code, errOut)
	}
	for _, args := range [][]string{
		{"tools", "call", "ls", "--backend", "kubernetes"},
		{"--backend", "kubernetes", "tools", "call", "ls"},
	} {
		code, _, errOut = run(t, env, args...)
		if code != exitConfig || !strings.Contains(errOut, "kubernetes.kubeconfig") {
			t.Errorf("%v without a kubeconfig: exit %d, stderr %q", args, code, errOut)
		}
	}
	// The unsafe local backend needs no cluster.
	code, out, errOut := run(t, env, "--backend", "kubernetes", "tools", "call", "ls", "--backend", "local")
	if code != 0 || !strings.Contains(out, "entries") {
		t.Errorf("local backend: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
