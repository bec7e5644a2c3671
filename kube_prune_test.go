//go:build kubernetes

package podbot

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
)

// TestPruneOnKubernetes: the cluster's leftovers come back in the engine
// prune's shape (an ended Pod as a container, an orphaned NetworkPolicy as
// an orphan, every list present in JSON), the running sandbox stays.
func TestPruneOnKubernetes(t *testing.T) {
	old := metav1.NewTime(time.Now().Add(-2 * createdGrace))
	managed := func(name, session string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "sb", CreationTimestamp: old,
			Labels: map[string]string{launchplan.LabelManaged: "true", launchplan.LabelSession: session}}
	}
	cs := fake.NewClientset(
		&corev1.Pod{ObjectMeta: managed("ended", "s1"), Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
		&corev1.Pod{ObjectMeta: managed("running", "s2"), Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		&networkingv1.NetworkPolicy{ObjectMeta: managed("gone", "s3")},
	)
	kc := kube.NewForClientset(cs, "sb", kube.Options{})
	for _, dry := range []bool{true, false} {
		res, err := PruneOnKubernetes(t.Context(), kc, PruneOptions{DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		if res.DryRun != dry || len(res.Containers) != 1 || res.Containers[0].Name != "ended" || res.Containers[0].State != "succeeded" ||
			len(res.Orphans) != 1 || res.Orphans[0] != (PrunedObject{Kind: "NetworkPolicy", Name: "gone"}) {
			t.Fatalf("dry run %v: %+v", dry, res)
		}
		js, _ := json.Marshal(res)
		var m map[string]json.RawMessage
		if err := json.Unmarshal(js, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"containers", "images", "egress", "egress_dirs", "pool_dirs", "orphans"} {
			if string(m[k]) == "null" || m[k] == nil {
				t.Errorf("JSON %s is %s, want a list", k, m[k])
			}
		}
	}
	if _, err := cs.CoreV1().Pods("sb").Get(t.Context(), "running", metav1.GetOptions{}); err != nil {
		t.Errorf("the running sandbox was pruned: %v", err)
	}
	if _, err := cs.CoreV1().Pods("sb").Get(t.Context(), "ended", metav1.GetOptions{}); err == nil {
		t.Error("the ended Pod is left")
	}
}
