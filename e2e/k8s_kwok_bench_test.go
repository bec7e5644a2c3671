//go:build e2e && kubernetes

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/pool"
)

// The kwok nodes the benchmark makes: managed by the kwok controller that
// `scripts/k8s.sh kwok up` runs (it manages nodes with kwokAnnotation),
// found and deleted by `scripts/k8s.sh kwok down` (kwokLabel), and
// tainted so no real test Pod lands on them.
const (
	kwokAnnotation = "kwok.x-k8s.io/node"
	kwokLabel      = "podbot.test/kwok"
	kwokTaint      = "kwok.x-k8s.io/node=fake:NoSchedule"
	kwokNodes      = 2
	kwokSandboxes  = 100
	kwokPoolSize   = 50
	kwokClaimers   = 4
)

// BenchmarkK8sKwok measures the kubernetes backend against the real API
// server with Pods on kwok's simulated nodes (no kubelet runs them, so this
// is API plumbing: scheduling, admission, etcd, the watch caches, podbot's
// own calls), all in one run:
//
//   - bare: a Pod of the sandbox's exact spec created with one API call and
//     watched until Running, the baseline;
//   - create: podbot's create (NetworkPolicy, Pod, its owner reference, the
//     wait until Running), 100 in a row;
//   - claim: 100 warm claims (podbot's create with a pool) from a pool of 50
//     made by the shared refiller, refilled once between the two halves;
//   - concurrent: the pool refilled once more and 4 claimers at once taking
//     48 members, racing for the same ones (the resourceVersion conflicts).
//
// Needs the cluster (source <(scripts/k8s.sh env)) and kwok
// (scripts/k8s.sh kwok up); run it with make bench-k8s.
func BenchmarkK8sKwok(b *testing.B) {
	path := os.Getenv("PODBOT_E2E_KUBECONFIG")
	image := os.Getenv("PODBOT_E2E_K8S_IMAGE")
	if path == "" || image == "" {
		if os.Getenv("CI") == "true" {
			b.Fatal("CI=true but PODBOT_E2E_KUBECONFIG or PODBOT_E2E_K8S_IMAGE is not set: source <(scripts/k8s.sh env)")
		}
		b.Skip("PODBOT_E2E_KUBECONFIG not set: make bench-k8s, or source <(scripts/k8s.sh env) and scripts/k8s.sh kwok up")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		b.Fatal(err)
	}
	rc.QPS, rc.Burst = 200, 400
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	id := fmt.Sprintf("%d", time.Now().UnixNano()%1_000_000_000)
	kwokNodesUp(b, ctx, cs, id)
	ns := kwokNamespace(b, ctx, cs, id)

	tol, err := config.ParseToleration(kwokTaint)
	if err != nil {
		b.Fatal(err)
	}
	kc, err := kube.Connect(kube.Options{Kubeconfig: path, Namespace: ns, ImagePullPolicy: "Never",
		NodeSelector: map[string]string{kwokLabel: id}, Tolerations: []config.Toleration{tol}})
	if err != nil {
		b.Fatal(err)
	}
	cfg := config.Default()
	cfg.Image, cfg.Network.Mode = image, config.NetworkNone
	cfg.Sandbox.Memory = 256 << 20
	cfg.Sandbox.CPUs = 0.5

	// bare: the same Pod spec podbot builds, one create, a watch until Running.
	bare := make([]time.Duration, 0, kwokSandboxes)
	for i := range kwokSandboxes {
		res, err := podbot.CreateRequest(engine.Endpoint{}, podbot.CreateOptions{Config: cfg, Name: fmt.Sprintf("bare-%03d", i)})
		if err != nil {
			b.Fatal(err)
		}
		plan, err := launchplan.Normalize(res)
		if err != nil {
			b.Fatal(err)
		}
		pod, err := kube.BuildPod(plan, kube.Options{ImagePullPolicy: "Never", NodeSelector: map[string]string{kwokLabel: id}, Tolerations: []config.Toleration{tol}})
		if err != nil {
			b.Fatal(err)
		}
		bare = append(bare, bareCreate(b, ctx, cs, ns, pod))
	}
	deletePods(b, ctx, cs, ns)

	// create: podbot's create on the kubernetes backend.
	created := make([]time.Duration, 0, kwokSandboxes)
	for range kwokSandboxes {
		t0 := time.Now()
		res, err := podbot.CreateOnKubernetes(ctx, kc, podbot.CreateOptions{Config: cfg})
		if err != nil {
			b.Fatal(err)
		}
		created = append(created, time.Since(t0))
		if !strings.HasPrefix(res.Name, "podbot-sandbox-") {
			b.Fatalf("created %q", res.Name)
		}
	}
	deletePods(b, ctx, cs, ns)

	// claim: a pool of 50 filled by the shared refiller, 50 claims, refilled,
	// 50 more.
	st, err := pool.OpenStore(filepath.Join(b.TempDir(), "pools"))
	if err != nil {
		b.Fatal(err)
	}
	spec := pool.Spec{Name: "bench", Kind: pool.KindAgent, Size: kwokPoolSize, Backend: pool.BackendKubernetes}
	bk := podbot.NewKubePoolBackend(kc, podbot.PoolOptions{Config: cfg})
	r := &pool.Refiller{Backend: bk, Store: st, Parallel: 8}
	var fills []time.Duration
	claims := make([]time.Duration, 0, kwokSandboxes)
	seen := map[string]bool{}
	for len(claims) < kwokSandboxes {
		t0 := time.Now()
		status, err := r.Reconcile(ctx, spec)
		if err != nil || status.Ready != kwokPoolSize {
			b.Fatalf("fill the pool: %+v, %v", status, err)
		}
		fills = append(fills, time.Since(t0))
		for range kwokPoolSize {
			t0 := time.Now()
			res, err := podbot.CreateOnKubernetes(ctx, kc, podbot.CreateOptions{Config: cfg, Pool: &spec})
			if err != nil {
				b.Fatal(err)
			}
			claims = append(claims, time.Since(t0))
			if res.Claim == nil || res.Claim.Outcome != podbot.ClaimWarm || seen[res.Name] {
				b.Fatalf("claim %d: %+v (seen before: %v)", len(claims), res.Claim, seen[res.Name])
			}
			seen[res.Name] = true
		}
	}
	// concurrent: the pool refilled, kwokClaimers claiming at once until
	// it is nearly empty; distinct members, none twice.
	if status, err := r.Reconcile(ctx, spec); err != nil || status.Ready != kwokPoolSize {
		b.Fatalf("refill the pool: %+v, %v", status, err)
	}
	var (
		mu         sync.Mutex
		wg         sync.WaitGroup
		concurrent []time.Duration
	)
	const perClaimer = kwokPoolSize / kwokClaimers
	start := make(chan struct{})
	for range kwokClaimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range perClaimer {
				t0 := time.Now()
				res, err := podbot.CreateOnKubernetes(ctx, kc, podbot.CreateOptions{Config: cfg, Pool: &spec})
				d := time.Since(t0)
				mu.Lock()
				switch {
				case err != nil:
					b.Errorf("concurrent claim: %v", err)
				case res.Claim == nil || res.Claim.Outcome != podbot.ClaimWarm || seen[res.Name]:
					b.Errorf("concurrent claim: %+v (seen before: %v)", res.Claim, seen[res.Name])
				default:
					seen[res.Name] = true
					concurrent = append(concurrent, d)
				}
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	deletePods(b, ctx, cs, ns)

	p := toolsPercentile
	ms := toolsMS
	load, _ := os.ReadFile("/proc/loadavg")
	b.Logf("kwok, %d nodes, %d sandboxes; load %s", kwokNodes, kwokSandboxes, strings.TrimSpace(string(load)))
	b.Logf("bare Pod create -> Running:    p50 %7.1f ms  p99 %7.1f ms", ms(p(bare, 50)), ms(p(bare, 99)))
	b.Logf("podbot create -> Running:      p50 %7.1f ms  p99 %7.1f ms  (%.2fx bare p50)", ms(p(created, 50)), ms(p(created, 99)), float64(p(created, 50))/float64(p(bare, 50)))
	b.Logf("warm claim:                    p50 %7.1f ms  p99 %7.1f ms  (%.3fx bare p50, %.3fx podbot create p50)", ms(p(claims, 50)), ms(p(claims, 99)),
		float64(p(claims, 50))/float64(p(bare, 50)), float64(p(claims, 50))/float64(p(created, 50)))
	b.Logf("warm claim, %d claimers at once: p50 %7.1f ms  p99 %7.1f ms  (%d claims)", kwokClaimers, ms(p(concurrent, 50)), ms(p(concurrent, 99)), len(concurrent))
	b.Logf("pool fill to %d (refiller, 8 at once): %v", kwokPoolSize, fills)
	b.ReportMetric(ms(p(bare, 50)), "bare-p50-ms")
	b.ReportMetric(ms(p(bare, 99)), "bare-p99-ms")
	b.ReportMetric(ms(p(created, 50)), "create-p50-ms")
	b.ReportMetric(ms(p(created, 99)), "create-p99-ms")
	b.ReportMetric(ms(p(claims, 50)), "claim-p50-ms")
	b.ReportMetric(ms(p(claims, 99)), "claim-p99-ms")
	b.ReportMetric(float64(p(claims, 50))/float64(p(bare, 50)), "claim/bare-p50")
	b.ReportMetric(ms(p(concurrent, 50)), "claim4-p50-ms")
	b.ReportMetric(ms(p(concurrent, 99)), "claim4-p99-ms")
}

// bareCreate creates pod with one API call and returns the time until a
// watch, started before the create, sees it Running.
func bareCreate(b *testing.B, ctx context.Context, cs kubernetes.Interface, ns string, pod *corev1.Pod) time.Duration {
	b.Helper()
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String()})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	t0 := time.Now()
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	timeout := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatalf("watch of %s ended", pod.Name)
			}
			if p, isPod := ev.Object.(*corev1.Pod); isPod && ev.Type != watch.Deleted && p.Status.Phase == corev1.PodRunning {
				return time.Since(t0)
			}
		case <-timeout:
			b.Fatalf("bare Pod %s not Running in a minute (is kwok up? scripts/k8s.sh kwok up)", pod.Name)
		}
	}
}

// kwokNodesUp creates the benchmark's fake nodes and waits until kwok has
// made them Ready; they are deleted when the benchmark ends.
func kwokNodesUp(b *testing.B, ctx context.Context, cs kubernetes.Interface, id string) {
	b.Helper()
	nodes := cs.CoreV1().Nodes()
	for i := range kwokNodes {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        fmt.Sprintf("podbot-kwok-%s-%d", id, i),
				Annotations: map[string]string{kwokAnnotation: "fake"},
				Labels:      map[string]string{kwokLabel: id, "kubernetes.io/role": "agent", "type": "kwok"},
			},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: kwokAnnotation, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}},
		}
		if _, err := nodes.Create(ctx, n, metav1.CreateOptions{}); err != nil {
			b.Fatalf("create kwok node: %v", err)
		}
		b.Cleanup(func() {
			cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := nodes.Delete(cctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				b.Errorf("delete kwok node %s: %v", n.Name, err)
			}
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := nodes.List(ctx, metav1.ListOptions{LabelSelector: kwokLabel + "=" + id})
		if err != nil {
			b.Fatal(err)
		}
		ready := 0
		for _, n := range list.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready == kwokNodes {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d kwok nodes Ready after 30s: is kwok running? scripts/k8s.sh kwok up", ready, kwokNodes)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kwokNamespace creates the benchmark's namespace, deleted (with its Pods,
// which kwok removes at once) when the benchmark ends, before the nodes.
func kwokNamespace(b *testing.B, ctx context.Context, cs kubernetes.Interface, id string) string {
	b.Helper()
	name := "podbot-kwok-" + id
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		deletePods(b, cctx, cs, name)
		if err := cs.CoreV1().Namespaces().Delete(cctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			b.Errorf("delete namespace %s: %v", name, err)
		}
	})
	for {
		if _, err := cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return name
		}
		select {
		case <-ctx.Done():
			b.Fatalf("namespace %s never got its default service account", name)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// deletePods deletes every Pod and NetworkPolicy in ns and waits until the
// Pods are gone.
func deletePods(b *testing.B, ctx context.Context, cs kubernetes.Interface, ns string) {
	b.Helper()
	grace := int64(0)
	if err := cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace}, metav1.ListOptions{}); err != nil {
		b.Errorf("delete Pods in %s: %v", ns, err)
	}
	if err := cs.NetworkingV1().NetworkPolicies(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		b.Errorf("delete NetworkPolicies in %s: %v", ns, err)
	}
	for t0 := time.Now(); time.Since(t0) < time.Minute; time.Sleep(100 * time.Millisecond) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err == nil && len(list.Items) == 0 {
			return
		}
	}
	b.Errorf("Pods still in %s a minute after their deletion", ns)
}
