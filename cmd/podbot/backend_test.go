package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// emptyConfig is PODBOT_CONFIG_PATH naming an empty config file.
func emptyConfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return "PODBOT_CONFIG_PATH=" + p
}

func TestBackendRefusesEngineOnlyCommands(t *testing.T) {
	cfg := emptyConfig(t)
	for _, args := range [][]string{
		{"--backend", "kubernetes", "start", "x"},
	} {
		code, _, errOut := run(t, []string{cfg}, args...)
		if code != exitConfig || !strings.Contains(errOut, "sandbox.backend (from --backend)") || !strings.Contains(errOut, "kubernetes backend yet") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	code, _, errOut := run(t, []string{cfg}, "--backend", "nope", "ps")
	if code != exitConfig || !strings.Contains(errOut, "expected engine or kubernetes") {
		t.Errorf("--backend nope: exit %d, stderr %q", code, errOut)
	}
}

func TestCreateGitHubRepoOnTheEngineIsRefused(t *testing.T) {
	cfg := emptyConfig(t)
	code, _, errOut := run(t, []string{cfg}, "create", "--repo", "octo-org/demo")
	if code != exitUsage || !strings.Contains(errOut, "kubernetes backend only") {
		t.Errorf("create --repo OWNER/NAME on the engine: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = run(t, []string{cfg}, "create", "--repo", "not a repo")
	if code != exitUsage || !strings.Contains(errOut, "OWNER/NAME") {
		t.Errorf("create --repo with neither a path nor OWNER/NAME: exit %d, stderr %q", code, errOut)
	}
}
