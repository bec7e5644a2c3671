//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podbot/podbot/launchplan"
)

// Token timing for the token daemon on the cluster: tokens live
// k8sDaemonTTL and are replaced k8sDaemonBuffer before they expire, so the
// daemon's timed refresh comes about 7 s after each token.
const (
	k8sDaemonTTL    = 12 * time.Second
	k8sDaemonBuffer = 5 * time.Second
)

// syncBuffer is a process's output, safe to read while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// k8sTokenSetup is a namespace, the fake GitHub App, a git server the
// Pods reach that accepts only the App's current token, and podbot
// configured with both.
type k8sTokenSetup struct {
	c  k8sTestCluster
	ns string
	pb k8sPodbot
	gh interface {
		CurrentToken() (string, time.Time, bool)
	}
	gs   *gitServer
	base string
}

func newK8sTokenSetup(t *testing.T, ctx context.Context) k8sTokenSetup {
	t.Helper()
	c := k8sCluster(t)
	ns := c.k8sNamespace(t, ctx)
	gh, _, keyPath := fakeGitHubAppTTL(t, k8sDaemonTTL)
	root := t.TempDir()
	newHostRepo(t, root, "octo-org/demo", "feature")
	gs, base := podGitServer(t, root, gh.Valid)
	pb := c.podbot(ns)
	pb.config = fmt.Sprintf("[github]\napp_id = %d\ninstallation_id = %d\nprivate_key_path = %q\napi_url = %q\nclone_base_url = %q\ntoken_refresh_buffer = %q\n",
		gh.AppID(), gh.InstallationID(), keyPath, gh.URL, base, k8sDaemonBuffer.String())
	pb.env = []string{"HOME=" + t.TempDir(), "PODBOT_SIDECAR_PATH=" + suite.bin + "/podbot-sidecar"}
	return k8sTokenSetup{c: c, ns: ns, pb: pb, gh: gh, gs: gs, base: base}
}

// create makes a detached sandbox Pod name; with repo it carries a token.
func (s k8sTokenSetup) create(t *testing.T, ctx context.Context, name string, repo bool) {
	t.Helper()
	args := []string{"create", "--name", name, "--network", "open"}
	if repo {
		args = append(args, "--repo", "octo-org/demo")
	}
	r := s.pb.run(t, ctx, nil, args...)
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != name {
		t.Fatalf("podbot create %v: exit %d\nstdout: %s\nstderr: %s", args, r.Code, r.Stdout, r.Stderr)
	}
}

// podToken is the Pod's /run/secrets/ghapp_token.
func (s k8sTokenSetup) podToken(t *testing.T, ctx context.Context, pod string) string {
	t.Helper()
	return s.c.exec(t, ctx, s.ns, pod, "", "cat", "/run/secrets/ghapp_token").stdout
}

// waitPodToken waits until the Pod's token is GitHub's current one and
// not one of old, and returns it.
func (s k8sTokenSetup) waitPodToken(t *testing.T, ctx context.Context, pod string, daemonOut *syncBuffer, old ...string) string {
	t.Helper()
	for {
		cur, _, ok := s.gh.CurrentToken()
		if got := s.podToken(t, ctx, pod); ok && got == cur && !slices.Contains(old, got) {
			return got
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the Pod %s never got a new token\ndaemon: %s", pod, daemonOut.String())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// hasLine reports whether a line of out holds every part.
func hasLine(out string, parts ...string) bool {
	for _, l := range strings.Split(out, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}

// startDaemon starts podbot token-daemon with args; it is killed when the
// test ends.
func (s k8sTokenSetup) startDaemon(t *testing.T, ctx context.Context, args ...string) (*exec.Cmd, *syncBuffer, <-chan error) {
	t.Helper()
	cmd := s.pb.cmd(t, ctx, append([]string{"token-daemon"}, args...)...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, out, exited
}

// TestK8sTokenDaemonServesCreatedPod: podbot create --repo OWNER/NAME on
// the cluster gives the Pod a token (the scope recorded on the Pod, the
// token nowhere in its spec); podbot token-daemon NAME replaces it at once
// and again before it expires (tokens live 12 s), git in the Pod clones
// with the current token through the sidecar, and when the Pod is deleted
// the daemon exits 0. Its check interval is an hour: only the Pod watch
// can tell it the Pod is gone.
func TestK8sTokenDaemonServesCreatedPod(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := newK8sTokenSetup(t, ctx)
	const pod = "tokd-one"
	s.create(t, ctx, pod, true)
	first, _, _ := s.gh.CurrentToken()
	if got := s.podToken(t, ctx, pod); got != first {
		t.Fatalf("the created Pod does not hold the App's token (holds one: %v)", got != "")
	}
	p, err := s.c.client.CoreV1().Pods(s.ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Labels[launchplan.LabelGitHubToken] != "true" || p.Annotations[launchplan.LabelGitHubRepo] != "octo-org/demo" ||
		p.Annotations[launchplan.LabelGitHubOrigin] != strings.TrimSuffix(s.base, "/") {
		t.Errorf("the Pod does not record the token's scope: labels %v, annotations %v", p.Labels, p.Annotations)
	}
	if strings.Contains(s.c.podYAML(t, ctx, s.ns, pod), first) {
		t.Error("the token is in the Pod spec")
	}

	_, out, exited := s.startDaemon(t, ctx, pod, "--check-interval", "1h")
	second := s.waitPodToken(t, ctx, pod, out, first)
	third := s.waitPodToken(t, ctx, pod, out, first, second)
	if r := s.c.exec(t, ctx, s.ns, pod, "", "git", "clone", "--quiet", s.base+"octo-org/demo.git", "/tmp/demo"); r.code != 0 {
		t.Fatalf("git clone in the Pod after the refresh: exit %d: %s", r.code, r.stderr)
	}
	if cur, _, _ := s.gh.CurrentToken(); s.gs.servedWith(cur) == 0 {
		t.Error("the clone was not served with the daemon's current token")
	}

	if r := s.pb.run(t, ctx, nil, "rm", "-f", pod); r.Code != 0 {
		t.Fatalf("podbot rm: exit %d: %s", r.Code, r.Stderr)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("podbot token-daemon %s exited with %v after its Pod was deleted\n%s", pod, err, out.String())
		}
	case <-ctx.Done():
		t.Fatalf("podbot token-daemon did not exit after its Pod was deleted\n%s", out.String())
	}
	if !strings.Contains(out.String(), "stopped or gone") {
		t.Errorf("the daemon did not say why it stopped:\n%s", out.String())
	}
	for _, tok := range []string{first, second, third} {
		if strings.Contains(out.String(), tok) {
			t.Error("podbot token-daemon logged a token value")
		}
	}
	s.c.waitGone(t, ctx, s.ns)
}

// TestK8sTokenDaemonAllFollowsPods: podbot token-daemon --all, started
// before any Pod exists and with hour-long list and check intervals, serves
// a token-carrying Pod as soon as podbot create makes it (the watch), leaves
// a Pod without a token alone, drops a deleted Pod's refresher and keeps
// running, serves the next Pod, and exits 0 on SIGINT.
func TestK8sTokenDaemonAllFollowsPods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := newK8sTokenSetup(t, ctx)
	cmd, out, exited := s.startDaemon(t, ctx, "--all", "--list-interval", "1h", "--check-interval", "1h")
	for !strings.Contains(out.String(), "token daemon serving every podbot Pod") {
		select {
		case err := <-exited:
			t.Fatalf("podbot token-daemon --all exited: %v\n%s", err, out.String())
		case <-ctx.Done():
			t.Fatalf("podbot token-daemon --all did not start\n%s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}

	s.create(t, ctx, "tokd-plain", false)
	s.create(t, ctx, "tokd-a", true)
	created, _, _ := s.gh.CurrentToken()
	var seen []string
	seen = append(seen, created, s.waitPodToken(t, ctx, "tokd-a", out, created))
	if r := s.c.exec(t, ctx, s.ns, "tokd-plain", "", "ls", "/run/secrets"); r.code == 0 && strings.TrimSpace(r.stdout) != "" {
		t.Errorf("the Pod without a token has /run/secrets: %q", r.stdout)
	}
	if strings.Contains(out.String(), "tokd-plain") {
		t.Errorf("the daemon took up the Pod without a token:\n%s", out.String())
	}

	if r := s.pb.run(t, ctx, nil, "rm", "-f", "tokd-a"); r.Code != 0 {
		t.Fatalf("podbot rm: exit %d: %s", r.Code, r.Stderr)
	}
	for !hasLine(out.String(), "stopped or gone", "tokd-a") {
		select {
		case err := <-exited:
			t.Fatalf("podbot token-daemon --all exited when a Pod was deleted: %v\n%s", err, out.String())
		case <-ctx.Done():
			t.Fatalf("the deleted Pod's refresher did not stop\n%s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}

	s.create(t, ctx, "tokd-b", true)
	created, _, _ = s.gh.CurrentToken()
	seen = append(seen, created, s.waitPodToken(t, ctx, "tokd-b", out, created))

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("podbot token-daemon --all exited with %v on SIGINT\n%s", err, out.String())
		}
	case <-ctx.Done():
		t.Fatalf("podbot token-daemon --all did not stop on SIGINT\n%s", out.String())
	}
	for _, tok := range seen {
		if strings.Contains(out.String(), tok) {
			t.Error("podbot token-daemon logged a token value")
		}
	}
}
