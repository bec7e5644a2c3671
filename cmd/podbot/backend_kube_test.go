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
