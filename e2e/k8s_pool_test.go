//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/pool"
)

// k8sPoolRow is one row of podbot pool ls --json.
type k8sPoolRow struct {
	Name     string `json:"name"`
	Backend  string `json:"backend"`
	Size     int    `json:"size"`
	Ready    int    `json:"ready"`
	Starting int    `json:"starting"`
	Claimed  int    `json:"claimed"`
}

func (p k8sPodbot) poolRow(t *testing.T, ctx context.Context, name string) k8sPoolRow {
	t.Helper()
	r := p.run(t, ctx, nil, "pool", "ls", "--json")
	if r.Code != 0 {
		t.Fatalf("pool ls: exit %d: %s", r.Code, r.Stderr)
	}
	var rows []k8sPoolRow
	if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil {
		t.Fatalf("pool ls --json: %v\n%s", err, r.Stdout)
	}
	for _, row := range rows {
		if row.Name == name {
			return row
		}
	}
	t.Fatalf("pool ls lacks %s:\n%s", name, r.Stdout)
	return k8sPoolRow{}
}

// TestK8sPool drives a warm pool on the real cluster: podbot pool create
// fills it with running Pods; concurrent podbot create --pool from several
// processes get distinct Pods (warm while members last, then cold, each
// reported); racing takes of one member through the API server let exactly
// one win (the others hit the resourceVersion conflict); podbot pool serve
// refills it; a claimed Pod is an ordinary sandbox (ps, exec, rm); podbot
// pool rm removes the unclaimed and half-made members and leaves the
// claimed ones running.
func TestK8sPool(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	pb := c.podbot(ns)
	pb.env = []string{"PODBOT_POOL_STATE_DIR=" + t.TempDir(), "PODBOT_POOL_REFILL_INTERVAL=500ms"}
	const size = 3
	pods := c.client.CoreV1().Pods(ns)

	t0 := time.Now()
	if r := pb.run(t, ctx, nil, "pool", "create", "kp", "--kind", "agent", "--size", "3", "--memory", "128m"); r.Code != 0 {
		t.Fatalf("pool create: exit %d: %s", r.Code, r.Stderr)
	}
	t.Logf("pool create (size %d): %v", size, time.Since(t0).Round(time.Millisecond))
	if row := pb.poolRow(t, ctx, "kp"); row.Ready != size || row.Backend != "kubernetes" {
		t.Fatalf("after create: %+v, want %d ready on kubernetes", row, size)
	}
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: launchplan.LabelPool + "=kp"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if p.Status.Phase != corev1.PodRunning || p.Labels[kube.LabelPoolState] != kube.PoolStateReady || !strings.HasPrefix(p.Name, "podbot-pool-kp-") {
			t.Errorf("member %s: phase %s labels %v", p.Name, p.Status.Phase, p.Labels)
		}
		if s := p.Spec; s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken || len(s.Containers) != 1 ||
			s.Containers[0].SecurityContext == nil || s.Containers[0].SecurityContext.AllowPrivilegeEscalation == nil || *s.Containers[0].SecurityContext.AllowPrivilegeEscalation {
			t.Errorf("member %s is not a hardened sandbox Pod", p.Name)
		}
	}

	// Several processes claim at once: size warm, the rest cold, all distinct.
	const claimers = size + 1
	type claim struct {
		name string
		res  result
	}
	claims := make([]claim, claimers)
	var wg sync.WaitGroup
	for i := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := pb.run(t, ctx, nil, "create", "--pool", "kp")
			claims[i] = claim{name: strings.TrimSpace(r.Stdout), res: r}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	warm, cold := 0, 0
	for _, cl := range claims {
		if cl.res.Code != 0 {
			t.Fatalf("create --pool: exit %d: %s", cl.res.Code, cl.res.Stderr)
		}
		if seen[cl.name] {
			t.Errorf("Pod %s handed out twice", cl.name)
		}
		seen[cl.name] = true
		switch {
		case strings.Contains(cl.res.Stderr, "outcome=warm"):
			warm++
			if !strings.HasPrefix(cl.name, "podbot-pool-kp-") {
				t.Errorf("warm claim %s is not a member", cl.name)
			}
		case strings.Contains(cl.res.Stderr, "outcome=cold"):
			cold++
		default:
			t.Errorf("claim of %s says neither warm nor cold: %s", cl.name, cl.res.Stderr)
		}
		p, err := pods.Get(ctx, cl.name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("claimed Pod %s: %v", cl.name, err)
		}
		if p.Status.Phase != corev1.PodRunning || p.Labels[kube.LabelPoolState] != kube.PoolStateClaimed {
			t.Errorf("claimed Pod %s: phase %s labels %v", cl.name, p.Status.Phase, p.Labels)
		}
	}
	if warm != size || cold != claimers-size {
		t.Errorf("%d warm and %d cold claims, want %d and %d", warm, cold, size, claimers-size)
	}
	if row := pb.poolRow(t, ctx, "kp"); row.Ready != 0 || row.Claimed != claimers {
		t.Errorf("after the claims: %+v, want 0 ready and %d claimed", row, claimers)
	}

	// A claimed Pod is an ordinary sandbox: ps lists it, exec runs in it, rm removes it.
	keep := claims[0].name
	if r := pb.run(t, ctx, nil, "ps"); r.Code != 0 || !strings.Contains(r.Stdout, keep) {
		t.Errorf("ps lacks the claimed %s: exit %d\n%s%s", keep, r.Code, r.Stdout, r.Stderr)
	}
	if r := pb.run(t, ctx, nil, "exec", keep, "--", "sh", "-c", "id -u; exit 3"); r.Code != 3 || strings.TrimSpace(r.Stdout) != "65534" {
		t.Errorf("exec in the claimed %s: %+v", keep, r)
	}
	for _, cl := range claims[1:] {
		if r := pb.run(t, ctx, nil, "rm", "-f", cl.name); r.Code != 0 {
			t.Errorf("rm -f %s: exit %d: %s", cl.name, r.Code, r.Stderr)
		}
	}

	// podbot pool serve brings the pool back to size.
	serve := pb.cmd(t, ctx, "pool", "serve")
	serveLog, err := os.CreateTemp(t.TempDir(), "serve")
	if err != nil {
		t.Fatal(err)
	}
	serve.Stdout, serve.Stderr = serveLog, serveLog
	t0 = time.Now()
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	stopServe := func() {
		if serve.Process == nil || serve.ProcessState != nil {
			return
		}
		_ = serve.Process.Signal(syscall.SIGTERM)
		if err := serve.Wait(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Errorf("pool serve: %v", err)
			}
		}
	}
	defer stopServe()
	for {
		if row := pb.poolRow(t, ctx, "kp"); row.Ready == size {
			break
		}
		if time.Since(t0) > 2*time.Minute {
			out, _ := os.ReadFile(serveLog.Name())
			t.Fatalf("pool not back to %d ready in 2m:\n%s", size, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("refill to %d ready: %v", size, time.Since(t0).Round(time.Millisecond))
	stopServe()

	// Racing takes of one member: exactly one wins; the others lost on the
	// resourceVersion precondition (the conflict path) and say ErrTaken.
	kc, err := kube.Connect(kube.Options{Kubeconfig: pb.kubeconfig, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	b := kc.PoolBackend(kube.PoolOptions{})
	ms, err := b.Members(ctx, "kp")
	if err != nil {
		t.Fatal(err)
	}
	var ready []pool.Member
	for _, m := range ms {
		if m.State == pool.StateReady {
			ready = append(ready, m)
		}
	}
	if len(ready) != size {
		t.Fatalf("%d ready members, want %d: %+v", len(ready), size, ms)
	}
	const racers = 6
	errs := make([]error, racers)
	start := make(chan struct{})
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = b.Take(ctx, ready[0])
		}()
	}
	close(start)
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, pool.ErrTaken):
			t.Errorf("racing Take: %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d racing takes of %s won, want exactly 1 (%v)", won, ready[0].Name, errs)
	}

	// pool rm removes the unclaimed members and a half-made one (a Pod
	// that cannot be scheduled), and leaves the claimed ones running.
	half := kube.MemberName("kp", "0123456789ab")
	hp := hardenedSmokePod(half, c.image)
	hp.Labels = map[string]string{launchplan.LabelManaged: "true", launchplan.LabelPool: "kp", kube.LabelPoolState: kube.PoolStateReady}
	hp.Spec.NodeSelector = map[string]string{"podbot.e2e/no-such-node": "x"}
	if _, err := pods.Create(ctx, hp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if row := pb.poolRow(t, ctx, "kp"); row.Ready != size-1 || row.Starting != 1 || row.Claimed != 2 {
		t.Errorf("before pool rm: %+v, want %d ready, 1 starting, 2 claimed", row, size-1)
	}
	if r := pb.run(t, ctx, nil, "pool", "rm", "kp"); r.Code != 0 {
		t.Fatalf("pool rm: exit %d: %s", r.Code, r.Stderr)
	}
	claimed := map[string]bool{keep: true, ready[0].Name: true}
	deadline := time.Now().Add(time.Minute)
	for {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, p := range list.Items {
			if !claimed[p.Name] {
				left = append(left, p.Name)
				continue
			}
			if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
				t.Fatalf("pool rm touched the claimed %s: phase %s", p.Name, p.Status.Phase)
			}
		}
		if len(left) == 0 && len(list.Items) == len(claimed) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after pool rm: Pods %v left, want only the claimed %v", left, claimed)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for name := range claimed {
		if r := pb.run(t, ctx, nil, "rm", "-f", name); r.Code != 0 {
			t.Errorf("rm -f %s: exit %d: %s", name, r.Code, r.Stderr)
		}
	}
	c.waitGone(t, ctx, ns)
}
