package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// goList returns the packages ./cmd/podbot links with the given build flags.
func goList(t *testing.T, flags ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not found on PATH: %v", err)
	}
	cmd := exec.Command(gobin, append(append([]string{"list", "-deps"}, flags...), ".")...)
	// The graph checked is the plain one, whatever GOFLAGS the tests ran under.
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// TestLeanBuildLinksNoKubernetesClient keeps client-go (and every k8s.io
// module) out of the podbot binary: only the companion, built with -tags
// kubernetes, links it.
func TestLeanBuildLinksNoKubernetesClient(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, p := range goList(t) {
		if strings.HasPrefix(p, "k8s.io/") || strings.HasPrefix(p, "sigs.k8s.io/") || p == "github.com/podbot/podbot/kube" {
			t.Errorf("podbot without -tags kubernetes links %s; keep it behind the kubernetes build tag", p)
		}
	}
	found := false
	for _, p := range goList(t, "-tags", "kubernetes") {
		found = found || p == "k8s.io/client-go/kubernetes"
	}
	if !found {
		t.Error("podbot-kube (-tags kubernetes) does not link k8s.io/client-go/kubernetes")
	}
}
