//go:build kubernetes

package podbot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/github"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/sandbox"
)

// countingTokens mints ghs_kubeN tokens living an hour and records the
// repositories each was asked for.
type countingTokens struct {
	mu    sync.Mutex
	n     int
	repos [][]string
}

func (c *countingTokens) InstallationToken(_ context.Context, repos []string) (github.Token, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	c.repos = append(c.repos, repos)
	return github.Token{Value: "ghs_kube" + strings.Repeat("x", c.n), ExpiresAt: time.Now().Add(time.Hour)}, nil
}

func TestKubeSidecarAtTheEnginePath(t *testing.T) {
	if kube.SidecarPath != sandbox.SidecarTarget || kubeSidecarAskpass != SidecarTarget {
		t.Fatalf("the sidecar is at %s in a Pod and %s in a container: the askpass path differs", kube.SidecarPath, sandbox.SidecarTarget)
	}
}

func TestKubeBackendTokenNeedsSidecar(t *testing.T) {
	b := newKubeBackend(nil, "")
	err := b.check(LaunchOptions{Repo: "acme/app", TokenSource: noTokens{}})
	var ce *errdefs.ConfigError
	if !errors.As(err, &ce) || ce.Key != "sidecar" || !errors.Is(err, errdefs.ErrMissingRequired) {
		t.Fatalf("a token without podbot-sidecar: %v, want a missing sidecar", err)
	}
	b = newKubeBackend(nil, filepath.Join(t.TempDir(), "missing"))
	if err := b.check(LaunchOptions{Repo: "acme/app", TokenSource: noTokens{}}); err == nil {
		t.Fatal("a missing sidecar file was accepted")
	}
}

func TestKubeBackendTokenInSecretNotInPod(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "podbot-sidecar")
	if err := os.WriteFile(sc, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset()
	kc := kube.NewForClientset(cs, "sb", kube.Options{})
	b := newKubeBackend(kc, sc)
	src := &countingTokens{}
	opts := LaunchOptions{Repo: "acme/app", TokenSource: src,
		Config: config.Config{GitHub: config.GitHub{CloneBaseURL: "https://git.example.com:8443/", TokenRefreshBuffer: time.Second}}}
	if err := b.check(opts); err != nil {
		t.Fatal(err)
	}
	if b.sidecar == nil || b.sidecar.Size() != len("#!/bin/sh\n") {
		t.Fatal("the sidecar was not loaded")
	}
	plan, err := launchplan.Normalize(launchplan.Request{Intent: launchplan.IntentInteractive, Image: "img", SessionID: "0123456789abcdef",
		Agent: launchplan.Agent{Kind: "custom", Command: "/bin/agent"}})
	if err != nil {
		t.Fatal(err)
	}
	sb := &Sandbox{be: b}
	if err := b.prepareToken(context.Background(), sb, opts, &plan, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(plan.Env, "GIT_ASKPASS="+kube.SidecarPath) {
		t.Errorf("plan env %v lacks the sidecar as GIT_ASKPASS", plan.Env)
	}
	if plan.Labels[launchplan.LabelGitHubRepo] != "acme/app" || plan.Labels[launchplan.LabelGitHubOrigin] != "https://git.example.com:8443" {
		t.Errorf("labels %v", plan.Labels)
	}
	if len(src.repos) != 1 || !slices.Equal(src.repos[0], []string{"app"}) {
		t.Errorf("tokens asked for %v, want [app] only", src.repos)
	}
	if b.token.pending != "ghs_kubex" || b.token.origin != "https://git.example.com:8443" || b.token.live {
		t.Errorf("before the Pod runs the store holds %q for %q (live %v)", b.token.pending, b.token.origin, b.token.live)
	}
	if sb.token == nil || sb.token.TokenPath() != "" {
		t.Error("the sandbox has no token daemon, or one with a token directory on the host")
	}
	// A refresh before the Pod runs waits for it.
	if err := b.token.SetToken(context.Background(), "ghs_second"); err != nil || b.token.pending != "ghs_second" {
		t.Errorf("SetToken before attach: %v, pending %q", err, b.token.pending)
	}
	// Withdrawn (a kept Pod), the store takes no more tokens.
	if err := b.stop(context.Background(), "ignored", 0); err != nil {
		t.Fatal(err)
	}
	if err := b.token.SetToken(context.Background(), "ghs_third"); err != nil || b.token.pending != "" {
		t.Errorf("SetToken after withdraw: %v, pending %q", err, b.token.pending)
	}
	// Nothing of the token is in the Pod spec or in a Secret.
	pod, err := kube.BuildPod(plan, kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(pod.String(), "ghs_") {
		t.Error("the token is in the Pod spec")
	}
	if list, _ := cs.CoreV1().Secrets("sb").List(context.Background(), metav1.ListOptions{}); len(list.Items) != 0 {
		t.Errorf("secrets %v", list.Items)
	}
	// The Pod does not exist here: the daemon sees it gone.
	if alive, err := podRunning(context.Background(), kc, "podbot-missing"); alive || err != nil {
		t.Errorf("podRunning of a missing Pod: %v, %v", alive, err)
	}
}
