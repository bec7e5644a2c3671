package kube

import (
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// pruneNow is the fake clock of the prune tests; ages are relative to it.
var pruneNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func meta(name string, age time.Duration, lbls map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "sb", UID: types.UID("uid-" + name), ResourceVersion: "1",
		CreationTimestamp: metav1.NewTime(pruneNow.Add(-age)), Labels: lbls}
}

func managedLabels(session string, extra ...string) map[string]string {
	l := map[string]string{launchplan.LabelManaged: "true", launchplan.LabelSession: session}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return l
}

// sandboxPod is a managed Pod with its NetworkPolicy and Secret, as
// Client.Launch leaves them.
func sandboxPod(name string, age time.Duration, phase corev1.PodPhase, extra ...string) []runtime.Object {
	session := "s-" + name
	p := &corev1.Pod{ObjectMeta: meta(name, age, managedLabels(session, extra...)), Status: corev1.PodStatus{Phase: phase}}
	return []runtime.Object{p,
		&networkingv1.NetworkPolicy{ObjectMeta: meta(name, age, managedLabels(session))},
		&corev1.Secret{ObjectMeta: meta(name, age, managedLabels(session))},
	}
}

func waiting(objs []runtime.Object, reason string) []runtime.Object {
	p := objs[0].(*corev1.Pod)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}}
	return objs
}

// egressObjects are sandbox's proxy Pod, ConfigMap and NetworkPolicy.
func egressObjects(sandbox string, age time.Duration) []runtime.Object {
	l := func() map[string]string { return egressLabels(sandbox) }
	return []runtime.Object{
		&corev1.Pod{ObjectMeta: meta(EgressName(sandbox), age, l()), Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		&corev1.ConfigMap{ObjectMeta: meta(EgressName(sandbox), age, l())},
		&networkingv1.NetworkPolicy{ObjectMeta: meta(EgressName(sandbox), age, l())},
	}
}

func pruneClient(objs ...[]runtime.Object) (*Client, *fake.Clientset) {
	cs := fake.NewClientset(slices.Concat(objs...)...)
	return NewForClientset(cs, "sb", Options{}), cs
}

func prune(t *testing.T, c *Client, dry bool) PruneResult {
	t.Helper()
	res, err := c.Prune(t.Context(), PruneOptions{DryRun: dry, Now: func() time.Time { return pruneNow }})
	if err != nil {
		t.Fatalf("prune: %v", err)
	}
	return res
}

func podNames(res PruneResult) []string {
	var out []string
	for _, p := range res.Pods {
		out = append(out, p.Name)
	}
	return out
}

func exists(t *testing.T, cs *fake.Clientset, kind, name string) bool {
	t.Helper()
	var err error
	switch kind {
	case "pod":
		_, err = cs.CoreV1().Pods("sb").Get(t.Context(), name, metav1.GetOptions{})
	case "np":
		_, err = cs.NetworkingV1().NetworkPolicies("sb").Get(t.Context(), name, metav1.GetOptions{})
	case "secret":
		_, err = cs.CoreV1().Secrets("sb").Get(t.Context(), name, metav1.GetOptions{})
	case "cm":
		_, err = cs.CoreV1().ConfigMaps("sb").Get(t.Context(), name, metav1.GetOptions{})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("get %s %s: %v", kind, name, err)
	}
	return err == nil
}

const (
	young = 10 * time.Second
	aged  = 2 * time.Minute
	ages  = 10 * time.Minute // past the start deadline and the grace
)

func TestPrunePods(t *testing.T) {
	member := MemberName("scratch", "0123456789ab")
	halfMade := MemberName("scratch", "0123456789ac")
	youngMember := MemberName("scratch", "0123456789ad")
	removing := MemberName("scratch", "0123456789ae")
	pool := func(state string) []string {
		return []string{launchplan.LabelPool, "scratch", LabelPoolState, state}
	}
	c, cs := pruneClient(
		sandboxPod("ended-ok", young, corev1.PodSucceeded),
		sandboxPod("ended-bad", young, corev1.PodFailed),
		sandboxPod("running", ages, corev1.PodRunning),
		waiting(sandboxPod("pull-old", aged, corev1.PodPending), "ImagePullBackOff"),
		waiting(sandboxPod("pull-young", young, corev1.PodPending), "ImagePullBackOff"),
		sandboxPod("pending-young", aged, corev1.PodPending), // may still be scheduled
		sandboxPod("pending-stuck", ages, corev1.PodPending),
		sandboxPod(member, ages, corev1.PodRunning, pool(PoolStateReady)...),
		sandboxPod(halfMade, aged, corev1.PodPending, pool(PoolStateReady)...),
		sandboxPod(youngMember, young, corev1.PodPending, pool(PoolStateReady)...),
		sandboxPod(removing, aged, corev1.PodRunning, pool(PoolStateRemoving)...),
		sandboxPod(MemberName("scratch", "0123456789af"), ages, corev1.PodRunning, pool(PoolStateClaimed)...),
		egressObjects("ended-bad", ages),
	)
	want := []string{"ended-bad", "ended-ok", halfMade, removing, "pending-stuck", "pull-old"}
	slices.Sort(want)

	dry := prune(t, c, true)
	if got := podNames(dry); !slices.Equal(got, want) {
		t.Fatalf("dry run lists %v, want %v", got, want)
	}
	if len(dry.Orphans)+len(dry.Egress) != 0 {
		t.Errorf("a pruned Pod's objects are listed apart: %+v %v", dry.Orphans, dry.Egress)
	}
	for _, name := range want {
		if !exists(t, cs, "pod", name) {
			t.Fatalf("dry run removed %s", name)
		}
	}

	res := prune(t, c, false)
	if got := podNames(res); !slices.Equal(got, want) {
		t.Fatalf("prune removed %v, want %v", got, want)
	}
	for _, name := range want {
		for _, kind := range []string{"pod", "np", "secret"} {
			if exists(t, cs, kind, name) {
				t.Errorf("%s %s left after prune", kind, name)
			}
		}
	}
	for _, kind := range []string{"pod", "cm", "np"} {
		if exists(t, cs, kind, EgressName("ended-bad")) {
			t.Errorf("egress %s of a pruned sandbox left", kind)
		}
	}
	for _, name := range []string{"running", "pull-young", "pending-young", member, youngMember, MemberName("scratch", "0123456789af")} {
		for _, kind := range []string{"pod", "np", "secret"} {
			if !exists(t, cs, kind, name) {
				t.Errorf("%s %s was pruned", kind, name)
			}
		}
	}
	if again := prune(t, c, true); len(again.Pods)+len(again.Orphans)+len(again.Egress) != 0 {
		t.Errorf("a second prune finds %+v", again)
	}
}

func TestPruneOrphans(t *testing.T) {
	lone := func(name string, age time.Duration, l map[string]string) []runtime.Object {
		return []runtime.Object{
			&networkingv1.NetworkPolicy{ObjectMeta: meta(name, age, l)},
			&corev1.Secret{ObjectMeta: meta(name, age, l)},
		}
	}
	// An object of a Pod that was replaced by one of another session.
	replaced := sandboxPod("replaced", young, corev1.PodRunning)
	c, cs := pruneClient(
		lone("gone", aged, managedLabels("s-gone")),
		lone("just-made", young, managedLabels("s-just-made")), // its Pod comes next
		lone("foreign", aged, map[string]string{"app": "other"}),
		lone("half-labelled", aged, map[string]string{launchplan.LabelManaged: "false", launchplan.LabelSession: "x"}),
		replaced[:1],
		lone("replaced", aged, managedLabels("s-old-session")),
		sandboxPod("running", aged, corev1.PodRunning),
		egressObjects("gone", ages),
		egressObjects("running", ages),
		egressObjects("starting", young), // its sandbox Pod is made once the proxy runs
	)
	// A foreign object shaped like an egress one but misnamed is not judged.
	if _, err := cs.CoreV1().ConfigMaps("sb").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: meta("other-name", ages,
		map[string]string{egressnet.LabelSandbox: "gone2", egressnet.LabelRole: egressnet.RoleProxy})}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []Orphan{{KindNetworkPolicy, "gone"}, {KindNetworkPolicy, "replaced"}, {KindSecret, "gone"}, {KindSecret, "replaced"}}

	dry := prune(t, c, true)
	if !slices.Equal(dry.Orphans, want) || !slices.Equal(dry.Egress, []string{"gone"}) || len(dry.Pods) != 0 {
		t.Fatalf("dry run lists %+v, want orphans %v and egress [gone]", dry, want)
	}
	if !exists(t, cs, "np", "gone") || !exists(t, cs, "secret", "gone") || !exists(t, cs, "cm", EgressName("gone")) {
		t.Fatal("dry run removed something")
	}

	res := prune(t, c, false)
	if !slices.Equal(res.Orphans, want) || !slices.Equal(res.Egress, []string{"gone"}) {
		t.Fatalf("prune removed %+v", res)
	}
	for _, o := range want {
		kind := map[string]string{KindNetworkPolicy: "np", KindSecret: "secret"}[o.Kind]
		if exists(t, cs, kind, o.Name) {
			t.Errorf("%s %s left", o.Kind, o.Name)
		}
	}
	for _, kind := range []string{"pod", "cm", "np"} {
		if exists(t, cs, kind, EgressName("gone")) {
			t.Errorf("orphaned egress %s left", kind)
		}
		if !exists(t, cs, kind, EgressName("running")) || !exists(t, cs, kind, EgressName("starting")) {
			t.Errorf("egress %s of a live or starting sandbox pruned", kind)
		}
	}
	for _, name := range []string{"just-made", "foreign", "half-labelled"} {
		if !exists(t, cs, "np", name) || !exists(t, cs, "secret", name) {
			t.Errorf("%s was pruned", name)
		}
	}
	if !exists(t, cs, "pod", "replaced") || !exists(t, cs, "np", "running") || !exists(t, cs, "secret", "running") || !exists(t, cs, "cm", "other-name") {
		t.Error("a live sandbox's objects or a foreign object were pruned")
	}
}

// TestPruneGrace: the grace is the option's, defaulting to a minute.
func TestPruneGrace(t *testing.T) {
	c, _ := pruneClient(
		[]runtime.Object{&networkingv1.NetworkPolicy{ObjectMeta: meta("gone", 30*time.Second, managedLabels("s"))}},
		waiting(sandboxPod("pull", 30*time.Second, corev1.PodPending), "ErrImagePull"),
	)
	now := func() time.Time { return pruneNow }
	res, err := c.Prune(t.Context(), PruneOptions{DryRun: true, Now: now})
	if err != nil || len(res.Orphans)+len(res.Pods) != 0 {
		t.Fatalf("within the default grace: %+v %v", res, err)
	}
	res, err = c.Prune(t.Context(), PruneOptions{DryRun: true, Now: now, Grace: 20 * time.Second})
	if err != nil || len(res.Orphans) != 1 || len(res.Pods) != 1 {
		t.Fatalf("past a 20 s grace: %+v %v", res, err)
	}
}

// TestPruneSkipsChangedPod: a Pod that changed since it was listed (a
// member claimed meanwhile) fails the delete precondition and stays.
func TestPruneSkipsChangedPod(t *testing.T) {
	f := newFakeCluster(t)
	c := NewForClientset(f.cs, "sb", Options{})
	p := &corev1.Pod{ObjectMeta: meta("ended", young, managedLabels("s", "test.phase", string(corev1.PodFailed)))}
	if _, err := f.cs.CoreV1().Pods("sb").Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bumped := false
	f.cs.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if !bumped {
			bumped = true
			f.bump(t, "ended") // a change between the list and the delete
		}
		return false, nil, nil
	})
	res := prune(t, c, false)
	if len(res.Pods) != 0 || f.conflicts.Load() != 1 || !exists(t, f.cs, "pod", "ended") {
		t.Fatalf("a changed Pod was pruned: %+v (conflicts %d)", res, f.conflicts.Load())
	}
}

// TestPruneListRefused: a list RBAC forbids is an error naming it, and the
// other leftovers are still pruned.
func TestPruneListRefused(t *testing.T) {
	c, cs := pruneClient(sandboxPod("ended", young, corev1.PodFailed))
	cs.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("rbac"))
	})
	res, err := c.Prune(t.Context(), PruneOptions{Now: func() time.Time { return pruneNow }})
	if !errors.Is(err, errdefs.ErrPermissionDenied) || !slices.Equal(podNames(res), []string{"ended"}) {
		t.Fatalf("res %+v, err %v", res, err)
	}
}
