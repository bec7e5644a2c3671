//go:build e2e

package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podbot/podbot/launchplan"
)

// TestK8sPrune: on the real cluster, podbot prune --dry-run lists exactly
// podbot's leftovers (a sandbox whose command exited, and a NetworkPolicy
// and a Secret labelled podbot's whose Pod never existed and which have no
// owner, once past the one-minute grace), podbot prune removes them, and
// a running sandbox and objects without podbot's labels stay.
func TestK8sPrune(t *testing.T) {
	c := k8sCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(t, ctx)
	pb := c.podbot(ns)

	// Orphans first: they must age past the grace.
	orphanLabels := map[string]string{launchplan.LabelManaged: "true", launchplan.LabelSession: "0123456789abcdef"}
	foreignLabels := map[string]string{"app": "not-podbot"}
	for _, o := range []struct {
		name   string
		labels map[string]string
	}{{"podbot-orphan", orphanLabels}, {"someone-elses", foreignLabels}} {
		np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: o.name, Labels: o.labels},
			Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"nothing": "selected"}}}}
		if _, err := c.client.NetworkingV1().NetworkPolicies(ns).Create(ctx, np, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: o.name, Labels: o.labels}, StringData: map[string]string{"k": "v"}}
		if _, err := c.client.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	madeOrphans := time.Now()

	r := pb.run(t, ctx, nil, "create", "--", "sh", "-c", "exec sleep 3600")
	if r.Code != 0 {
		t.Fatalf("create running: exit %d: %s", r.Code, r.Stderr)
	}
	running := strings.TrimSpace(r.Stdout)
	r = pb.run(t, ctx, nil, "create", "--", "sh", "-c", "sleep 2; exit 0")
	if r.Code != 0 {
		t.Fatalf("create ending: exit %d: %s", r.Code, r.Stderr)
	}
	ended := strings.TrimSpace(r.Stdout)
	for {
		p, err := c.client.CoreV1().Pods(ns).Get(ctx, ended, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase == corev1.PodSucceeded {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Pod %s never ended: phase %s", ended, p.Status.Phase)
		case <-time.After(200 * time.Millisecond):
		}
	}
	endedPod, err := c.client.CoreV1().Pods(ns).Get(ctx, ended, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	endedLine := "container " + ended + " (" + string(endedPod.UID)[:12] + ")"
	lines := func(out, verb string) []string {
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l != "" {
				got = append(got, strings.TrimPrefix(l, verb+" "))
			}
		}
		slices.Sort(got)
		return got
	}

	// Within the grace the orphans may be a create in progress: only the
	// ended Pod (which needs no grace) is listed.
	if time.Since(madeOrphans) < 50*time.Second {
		r = pb.run(t, ctx, nil, "prune", "--dry-run")
		if got := lines(r.Stdout, "would remove"); r.Code != 0 || !slices.Equal(got, []string{endedLine}) {
			t.Errorf("dry run within the grace: exit %d, %q, stderr %q; want [%s]", r.Code, got, r.Stderr, endedLine)
		}
	}
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(time.Until(madeOrphans.Add(62 * time.Second))):
	}

	want := []string{"NetworkPolicy podbot-orphan (its sandbox is gone)", "Secret podbot-orphan (its sandbox is gone)", endedLine}
	slices.Sort(want)
	r = pb.run(t, ctx, nil, "prune", "--dry-run")
	if got := lines(r.Stdout, "would remove"); r.Code != 0 || !slices.Equal(got, want) || !strings.Contains(r.Stderr, "would remove: containers 1") {
		t.Fatalf("dry run: exit %d, %q, stderr %q; want %q", r.Code, got, r.Stderr, want)
	}
	if _, err := c.client.CoreV1().Pods(ns).Get(ctx, ended, metav1.GetOptions{}); err != nil {
		t.Fatalf("the dry run removed %s: %v", ended, err)
	}
	r = pb.run(t, ctx, nil, "prune")
	if got := lines(r.Stdout, "removed"); r.Code != 0 || !slices.Equal(got, want) {
		t.Fatalf("prune: exit %d, %q, stderr %q; want %q", r.Code, got, r.Stderr, want)
	}

	gone := func(kind string, err error) {
		t.Helper()
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s left after prune: %v", kind, err)
		}
	}
	_, err = c.client.CoreV1().Pods(ns).Get(ctx, ended, metav1.GetOptions{})
	if err == nil {
		// Deleted with a grace of 0, the Pod may still be finishing.
		p, _ := c.client.CoreV1().Pods(ns).Get(ctx, ended, metav1.GetOptions{})
		if p == nil || p.DeletionTimestamp == nil {
			t.Errorf("Pod %s not deleted", ended)
		}
	} else {
		gone("Pod "+ended, err)
	}
	_, err = c.client.NetworkingV1().NetworkPolicies(ns).Get(ctx, ended, metav1.GetOptions{})
	gone("NetworkPolicy "+ended, err)
	_, err = c.client.NetworkingV1().NetworkPolicies(ns).Get(ctx, "podbot-orphan", metav1.GetOptions{})
	gone("orphaned NetworkPolicy", err)
	_, err = c.client.CoreV1().Secrets(ns).Get(ctx, "podbot-orphan", metav1.GetOptions{})
	gone("orphaned Secret", err)

	p, err := c.client.CoreV1().Pods(ns).Get(ctx, running, metav1.GetOptions{})
	if err != nil || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		t.Errorf("the running sandbox %s was touched: %v", running, err)
	}
	if _, err := c.client.NetworkingV1().NetworkPolicies(ns).Get(ctx, running, metav1.GetOptions{}); err != nil {
		t.Errorf("the running sandbox's NetworkPolicy: %v", err)
	}
	if _, err := c.client.NetworkingV1().NetworkPolicies(ns).Get(ctx, "someone-elses", metav1.GetOptions{}); err != nil {
		t.Errorf("a NetworkPolicy without podbot's labels: %v", err)
	}
	if _, err := c.client.CoreV1().Secrets(ns).Get(ctx, "someone-elses", metav1.GetOptions{}); err != nil {
		t.Errorf("a Secret without podbot's labels: %v", err)
	}
	if r := pb.run(t, ctx, nil, "prune", "--dry-run"); r.Code != 0 || r.Stdout != "" || !strings.Contains(r.Stderr, "nothing to prune") {
		t.Errorf("a second prune: %+v", r)
	}
	if r := pb.run(t, ctx, nil, "rm", "-f", running); r.Code != 0 {
		t.Errorf("rm -f %s: %+v", running, r)
	}
}
