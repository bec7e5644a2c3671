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
	tok, origin := b.token.first()
	if tok != "ghs_kubex" || origin != "https://git.example.com:8443" {
		t.Errorf("first token %q origin %q", tok, origin)
	}
	// The Secret kube.Launch would make: the token and origin in it, and
	// nowhere in the Pod.
	pod, err := kube.BuildPod(plan, kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(pod.String(), tok) {
		t.Error("the token is in the Pod spec")
	}
	secret, err := kube.BuildSecret(pod, kube.SecretData{Token: tok, Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	secret.Namespace = "sb"
	if _, err := cs.CoreV1().Secrets("sb").Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b.token.attach()
	if err := b.token.SetToken(context.Background(), "ghs_refreshed"); err != nil {
		t.Fatal(err)
	}
	got, _ := cs.CoreV1().Secrets("sb").Get(context.Background(), secret.Name, metav1.GetOptions{})
	if string(got.Data[kube.SecretTokenKey]) != "ghs_refreshed" {
		t.Errorf("after a refresh the Secret holds %q", got.Data[kube.SecretTokenKey])
	}
	// A kept Pod loses its token when the run ends.
	if err := b.stop(context.Background(), secret.Name, 0); err != nil {
		t.Fatal(err)
	}
	got, _ = cs.CoreV1().Secrets("sb").Get(context.Background(), secret.Name, metav1.GetOptions{})
	if _, ok := got.Data[kube.SecretTokenKey]; ok {
		t.Error("stop left the token in the kept Pod's Secret")
	}
	// The Pod does not exist here: the daemon sees it gone.
	if alive, err := podRunning(context.Background(), kc, secret.Name); alive || err != nil {
		t.Errorf("podRunning of a missing Pod: %v, %v", alive, err)
	}
}
