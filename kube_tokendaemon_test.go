//go:build kubernetes

package podbot

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
)

// podWrites records the tokens the daemon writes into Pods.
type podWrites struct {
	mu     sync.Mutex
	writes map[string][]string
	got    chan string // Pod names, one per write
}

func newPodWrites() *podWrites {
	return &podWrites{writes: map[string][]string{}, got: make(chan string, 64)}
}

func (w *podWrites) WriteToken(_ context.Context, name, token, origin string) error {
	if origin != "https://git.example.com" {
		return errors.New("unexpected origin " + origin)
	}
	w.mu.Lock()
	w.writes[name] = append(w.writes[name], token)
	w.mu.Unlock()
	w.got <- name
	return nil
}

func (w *podWrites) WithdrawToken(context.Context, string) error { return nil }

func (w *podWrites) count(name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.writes[name])
}

// lockedBuffer is a log sink safe for the daemons' goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// tokenPod is a running podbot Pod; with token it carries what podbot
// create records for a GitHub token.
func tokenPod(name string, token bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "sb", UID: types.UID("uid-" + name),
			Labels: map[string]string{launchplan.LabelManaged: "true"}, Annotations: map[string]string{}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if token {
		p.Labels[launchplan.LabelGitHubToken] = "true"
		p.Annotations[launchplan.LabelGitHubRepo] = "acme/app"
		p.Annotations[launchplan.LabelGitHubOrigin] = "https://git.example.com"
	}
	return p
}

func waitWrite(t *testing.T, w *podWrites, want string) {
	t.Helper()
	for {
		select {
		case got := <-w.got:
			if got == want {
				return
			}
			t.Fatalf("a token was written into %s, want %s", got, want)
		case <-time.After(10 * time.Second):
			t.Fatalf("no token was written into %s", want)
		}
	}
}

func waitLog(t *testing.T, logs *lockedBuffer, parts ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, l := range strings.Split(logs.String(), "\n") {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(l, p)
			}
			if ok {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q:\n%s", parts, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The intervals are an hour: whatever the daemon does within the test, it
// does because the Pod watch told it.
func TestKubeTokenDaemonAllFollowsPodWatch(t *testing.T) {
	cs := fake.NewClientset()
	kc := kube.NewForClientset(cs, "sb", kube.Options{})
	w := newPodWrites()
	src := &countingTokens{}
	logs := &lockedBuffer{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runKubeTokenDaemon(ctx, kc, w, TokenDaemonOptions{All: true, Source: src,
			ListInterval: time.Hour, CheckInterval: time.Hour, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	}()
	waitLog(t, logs, "token daemon serving every podbot Pod")
	pods := cs.CoreV1().Pods("sb")
	// A Pod without a token is ignored; one with a token is served when
	// the watch reports it.
	for _, p := range []*corev1.Pod{tokenPod("plain", false), tokenPod("tok-a", true)} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitWrite(t, w, "tok-a")
	// The deleted Pod's daemon stops at once; the daemon keeps running and
	// serves the next Pod.
	if err := pods.Delete(ctx, "tok-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, "container=tok-a", "stopped or gone")
	if _, err := pods.Create(ctx, tokenPod("tok-b", true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitWrite(t, w, "tok-b")
	if n := w.count("plain"); n != 0 {
		t.Errorf("%d tokens written into the Pod without a token", n)
	}
	src.mu.Lock()
	for _, r := range src.repos {
		if len(r) != 1 || r[0] != "app" {
			t.Errorf("a token was asked for %v, want [app]", r)
		}
	}
	src.mu.Unlock()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("--all after cancel: %v", err)
	}
	if strings.Contains(logs.String(), "ghs_kube") {
		t.Error("a token value reached the log")
	}
}

func TestKubeTokenDaemonOnePod(t *testing.T) {
	cs := fake.NewClientset(tokenPod("tok-a", true), tokenPod("plain", false))
	kc := kube.NewForClientset(cs, "sb", kube.Options{})
	w := newPodWrites()
	opts := TokenDaemonOptions{Source: &countingTokens{}, CheckInterval: time.Hour}

	opts.Container = "plain"
	if err := runKubeTokenDaemon(t.Context(), kc, w, opts); !errors.Is(err, errdefs.ErrRefused) {
		t.Errorf("a Pod without a token: %v, want refused", err)
	}
	opts.Container = "missing"
	if err := runKubeTokenDaemon(t.Context(), kc, w, opts); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a missing Pod: %v, want not found", err)
	}
	if err := runKubeTokenDaemon(t.Context(), kc, w, TokenDaemonOptions{Source: &countingTokens{}}); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("neither a Pod nor --all: %v", err)
	}

	opts.Container = "tok-a"
	done := make(chan error, 1)
	go func() { done <- runKubeTokenDaemon(t.Context(), kc, w, opts) }()
	waitWrite(t, w, "tok-a")
	if err := cs.CoreV1().Pods("sb").Delete(t.Context(), "tok-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the daemon of a deleted Pod returned %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not stop when its Pod was deleted")
	}
}

func TestPodTokenTargetNeedsScope(t *testing.T) {
	sb := kube.Sandbox{Name: "p", Labels: map[string]string{launchplan.LabelGitHubToken: "true"},
		Annotations: map[string]string{launchplan.LabelGitHubRepo: "acme/app"}}
	if _, err := podTokenTarget(sb, newPodWrites()); !errors.Is(err, errdefs.ErrRefused) {
		t.Errorf("no origin: %v", err)
	}
	sb.Annotations = map[string]string{launchplan.LabelGitHubOrigin: "https://git.example.com", launchplan.LabelGitHubRepo: "../x"}
	if _, err := podTokenTarget(sb, newPodWrites()); !errors.Is(err, errdefs.ErrRefused) {
		t.Errorf("a bad repository: %v", err)
	}
	sb.Annotations[launchplan.LabelGitHubRepo] = "acme/app"
	tg, err := podTokenTarget(sb, newPodWrites())
	if err != nil || len(tg.Repositories) != 1 || tg.Repositories[0] != "app" || tg.Store == nil {
		t.Errorf("target %+v, %v", tg, err)
	}
}

func TestCreateTokenRefusals(t *testing.T) {
	for _, tc := range []struct {
		opts CreateOptions
		key  string
	}{
		{CreateOptions{GitHubRepo: "acme/app"}, "github.app_id"},
		{CreateOptions{GitHubRepo: "acme/app", TokenSource: &countingTokens{}, LocalClone: &LocalCloneOptions{Path: "/x"}}, "repo"},
	} {
		_, err := CreateOnKubernetes(t.Context(), kube.NewForClientset(fake.NewClientset(), "sb", kube.Options{}), tc.opts)
		var ce *errdefs.ConfigError
		if !errors.As(err, &ce) || ce.Key != tc.key {
			t.Errorf("%+v: %v, want a config error on %s", tc.opts, err, tc.key)
		}
	}
	if _, err := Create(t.Context(), nil, CreateOptions{GitHubRepo: "acme/app"}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("create --repo OWNER/NAME on the engine: %v, want unsupported", err)
	}
}
