//go:build e2e

package e2e

import (
	"context"
	"debug/buildinfo"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestK8sHandOver checks the split between podbot and its companion on the
// real cluster: podbot links no k8s.io module, podbot-kube does, podbot
// hands a kubernetes command to podbot-kube beside it (the other TestK8s*
// tests run through that hand-over too), and a podbot without its companion
// says which file is missing and how to build it.
func TestK8sHandOver(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	links := func(bin, prefix string) bool {
		t.Helper()
		info, err := buildinfo.ReadFile(filepath.Join(suite.bin, bin))
		if err != nil {
			t.Fatalf("%s: %v (build both with make build)", bin, err)
		}
		for _, d := range info.Deps {
			if strings.HasPrefix(d.Path, prefix) {
				return true
			}
		}
		return false
	}
	if links("podbot", "k8s.io/") {
		t.Error("podbot links a k8s.io module; only podbot-kube should")
	}
	if !links("podbot-kube", "k8s.io/client-go") {
		t.Error("podbot-kube does not link k8s.io/client-go")
	}

	ns := c.k8sNamespace(t, ctx)
	pb := c.podbot(ns)
	r := pb.run(t, ctx, nil, "--log-level", "debug", "ps", "--json")
	companion := filepath.Join(suite.bin, "podbot-kube")
	if real, err := filepath.EvalSymlinks(companion); err == nil {
		companion = real
	}
	if r.Code != 0 || !strings.Contains(r.Stderr, "handing over") || !strings.Contains(r.Stderr, companion) || !strings.Contains(r.Stdout, "[") {
		t.Errorf("ps through the hand-over: %+v", r)
	}

	// podbot alone in a directory: a clear error naming the missing file.
	alone := filepath.Join(t.TempDir(), "podbot")
	data, err := os.ReadFile(filepath.Join(suite.bin, "podbot"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := pb.cmd(t, ctx, "ps")
	cmd.Path = alone
	out, err := cmd.CombinedOutput()
	const exitFilesystem = 6
	if code := exitStatus(t, err, []string{"ps"}); code != exitFilesystem ||
		!strings.Contains(string(out), filepath.Join(filepath.Dir(alone), "podbot-kube")) || !strings.Contains(string(out), "make build") {
		t.Errorf("podbot without its companion: exit %d, output %q", code, out)
	}
}
