package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/pool"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// fakeCluster is a fake clientset whose Pod patches and deletes honour a
// resourceVersion precondition as the API server does (the fake tracker
// ignores it): every change bumps the version, a stale one is a conflict.
type fakeCluster struct {
	cs        *fake.Clientset
	mu        sync.Mutex // one change at a time, as etcd's compare-and-swap
	version   int64
	conflicts atomic.Int64
	patches   atomic.Int64
}

func newFakeCluster(t *testing.T) *fakeCluster {
	t.Helper()
	f := &fakeCluster{cs: fake.NewClientset()}
	tracker := f.cs.Tracker()
	// A created Pod runs at once (there is no kubelet) and gets a version.
	f.cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		f.mu.Lock()
		defer f.mu.Unlock()
		f.version++
		p.ResourceVersion = strconv.FormatInt(f.version, 10)
		p.UID = types.UID(fmt.Sprintf("uid-%d", f.version))
		p.CreationTimestamp = metav1.Now()
		p.Namespace = a.GetNamespace()
		if p.Labels["test.phase"] == "" {
			p.Status.Phase = corev1.PodRunning
		} else {
			p.Status.Phase = corev1.PodPhase(p.Labels["test.phase"])
		}
		if err := tracker.Add(p); err != nil {
			return true, nil, apierrors.NewAlreadyExists(podsGVR.GroupResource(), p.Name)
		}
		return true, p, nil
	})
	f.cs.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		if pa.GetPatchType() != types.MergePatchType {
			t.Errorf("patch type %s, want a merge patch", pa.GetPatchType())
		}
		var patch statePatch
		if err := json.Unmarshal(pa.GetPatch(), &patch); err != nil {
			t.Errorf("patch %s: %v", pa.GetPatch(), err)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.patches.Add(1)
		obj, err := tracker.Get(podsGVR, pa.GetNamespace(), pa.GetName())
		if err != nil {
			return true, nil, err
		}
		p := obj.(*corev1.Pod).DeepCopy()
		if patch.Metadata.ResourceVersion != "" && patch.Metadata.ResourceVersion != p.ResourceVersion {
			f.conflicts.Add(1)
			return true, nil, apierrors.NewConflict(podsGVR.GroupResource(), p.Name, errors.New("the object has been modified"))
		}
		for k, v := range patch.Metadata.Labels {
			p.Labels[k] = v
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		for k, v := range patch.Metadata.Annotations {
			p.Annotations[k] = v
		}
		f.version++
		p.ResourceVersion = strconv.FormatInt(f.version, 10)
		return true, p, tracker.Update(podsGVR, p, p.Namespace)
	})
	f.cs.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		da := a.(k8stesting.DeleteAction)
		f.mu.Lock()
		defer f.mu.Unlock()
		obj, err := tracker.Get(podsGVR, da.GetNamespace(), da.GetName())
		if err != nil {
			return true, nil, err
		}
		p := obj.(*corev1.Pod)
		if pre := da.GetDeleteOptions().Preconditions; pre != nil {
			if (pre.ResourceVersion != nil && *pre.ResourceVersion != p.ResourceVersion) || (pre.UID != nil && *pre.UID != p.UID) {
				f.conflicts.Add(1)
				return true, nil, apierrors.NewConflict(podsGVR.GroupResource(), p.Name, errors.New("precondition failed"))
			}
		}
		return true, nil, tracker.Delete(podsGVR, da.GetNamespace(), da.GetName())
	})
	return f
}

// bump changes a Pod's version without touching its labels, as a kubelet
// status update does.
func (f *fakeCluster) bump(t *testing.T, name string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	obj, err := f.cs.Tracker().Get(podsGVR, "sb", name)
	if err != nil {
		t.Fatal(err)
	}
	p := obj.(*corev1.Pod).DeepCopy()
	f.version++
	p.ResourceVersion = strconv.FormatInt(f.version, 10)
	if err := f.cs.Tracker().Update(podsGVR, p, "sb"); err != nil {
		t.Fatal(err)
	}
}

func (f *fakeCluster) pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p, err := f.cs.CoreV1().Pods("sb").Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return p
}

// poolBackend is a pool backend on f whose members are testPlan's Pods,
// each with a session of its own.
func poolBackend(t *testing.T, f *fakeCluster) *PoolBackend {
	t.Helper()
	var n atomic.Int64
	c := NewForClientset(f.cs, "sb", Options{})
	return c.PoolBackend(PoolOptions{Plan: func(spec pool.Spec) (launchplan.Plan, error) {
		session := fmt.Sprintf("%012x%04x", n.Add(1), 0)
		return testPlan(t, func(r *launchplan.Request) { r.SessionID = session }), nil
	}})
}

var agentSpec = pool.Spec{Name: "scratch", Kind: pool.KindAgent, Size: 3, Backend: pool.BackendKubernetes}

func fill(t *testing.T, b *PoolBackend, n int) []pool.Member {
	t.Helper()
	var out []pool.Member
	for range n {
		m, err := b.Create(t.Context(), agentSpec)
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		out = append(out, m)
	}
	return out
}

func TestPoolCreateMember(t *testing.T) {
	f := newFakeCluster(t)
	b := poolBackend(t, f)
	m := fill(t, b, 1)[0]
	if !isMemberName("scratch", m.Name) || m.State != pool.StateReady || m.ID == "" {
		t.Fatalf("member %+v", m)
	}
	p := f.pod(t, m.Name)
	if p.Labels[launchplan.LabelPool] != "scratch" || p.Labels[LabelPoolState] != PoolStateReady || p.Labels[launchplan.LabelManaged] != "true" {
		t.Errorf("labels %v", p.Labels)
	}
	// The member is a hardened sandbox Pod like any other, with its own policy.
	if s := p.Spec; s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken || s.Containers[0].SecurityContext.Capabilities.Drop[0] != "ALL" {
		t.Errorf("member Pod is not the hardened sandbox Pod: %+v", s)
	}
	if _, err := f.cs.NetworkingV1().NetworkPolicies("sb").Get(t.Context(), m.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("member NetworkPolicy: %v", err)
	}
	tools := agentSpec
	tools.Kind = pool.KindTools
	if _, err := b.Create(t.Context(), tools); err == nil {
		t.Error("a tools member was created; want the kind refused")
	}
}

func TestPoolMembersStates(t *testing.T) {
	f := newFakeCluster(t)
	b := poolBackend(t, f)
	ready := fill(t, b, 2)
	pods := f.cs.CoreV1().Pods("sb")
	mk := func(name string, labels map[string]string, phase corev1.PodPhase, waiting string) {
		t.Helper()
		l := map[string]string{launchplan.LabelManaged: "true", launchplan.LabelPool: "scratch", "test.phase": string(phase)}
		for k, v := range labels {
			l[k] = v
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
		if _, err := pods.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if waiting != "" {
			p := f.pod(t, name)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting}}}}
			if err := f.cs.Tracker().Update(podsGVR, p, "sb"); err != nil {
				t.Fatal(err)
			}
		}
	}
	ready1 := map[string]string{LabelPoolState: PoolStateReady}
	mk(MemberName("scratch", "00000000000a"), ready1, corev1.PodPending, "ContainerCreating")
	mk(MemberName("scratch", "00000000000b"), ready1, corev1.PodPending, "ErrImageNeverPull")
	mk(MemberName("scratch", "00000000000c"), ready1, corev1.PodFailed, "")
	mk(MemberName("scratch", "00000000000d"), map[string]string{LabelPoolState: PoolStateClaimed}, corev1.PodRunning, "")
	mk(MemberName("scratch", "00000000000e"), map[string]string{LabelPoolState: PoolStateRemoving}, corev1.PodRunning, "")
	mk("someone-elses", ready1, corev1.PodRunning, "")
	mk(MemberName("other", "00000000000f"), ready1, corev1.PodRunning, "")
	ms, err := b.Members(t.Context(), "scratch")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		ready[0].Name: pool.StateReady, ready[1].Name: pool.StateReady,
		MemberName("scratch", "00000000000a"): pool.StateStarting,
		MemberName("scratch", "00000000000b"): pool.StateFailed,
		MemberName("scratch", "00000000000c"): pool.StateFailed,
		MemberName("scratch", "00000000000d"): pool.StateClaimed,
		MemberName("scratch", "00000000000e"): pool.StateFailed,
		"someone-elses":                       pool.StateClaimed,
		MemberName("other", "00000000000f"):   pool.StateClaimed,
	}
	got := map[string]string{}
	for _, m := range ms {
		got[m.Name] = m.State
		if m.Version == "" || m.ID == "" {
			t.Errorf("member %s has no version or uid: %+v", m.Name, m)
		}
	}
	if len(got) != len(want) {
		t.Errorf("members %v, want %v", got, want)
	}
	for n, s := range want {
		if got[n] != s {
			t.Errorf("member %s: state %q, want %q", n, got[n], s)
		}
	}
	if _, err := b.Members(t.Context(), "Bad Name"); err == nil {
		t.Error("an invalid pool name was listed")
	}
}

// TestPoolTakeConflict: two claimers that listed the same member: the
// first patch wins, the second conflicts on the resourceVersion, reads the
// Pod again, sees it claimed, and gets ErrTaken.
func TestPoolTakeConflict(t *testing.T) {
	f := newFakeCluster(t)
	b := poolBackend(t, f)
	fill(t, b, 1)
	ms, err := b.Members(t.Context(), "scratch")
	if err != nil || len(ms) != 1 {
		t.Fatalf("members %v, %v", ms, err)
	}
	if err := b.Take(t.Context(), ms[0]); err != nil {
		t.Fatalf("first Take: %v", err)
	}
	err = b.Take(t.Context(), ms[0])
	if !errors.Is(err, pool.ErrTaken) {
		t.Fatalf("second Take with the listed version: %v; want ErrTaken", err)
	}
	if f.conflicts.Load() != 1 {
		t.Errorf("conflicts %d, want 1", f.conflicts.Load())
	}
	p := f.pod(t, ms[0].Name)
	if p.Labels[LabelPoolState] != PoolStateClaimed || p.Annotations[LabelPoolState] != PoolStateClaimed {
		t.Errorf("claimed Pod labels %v annotations %v", p.Labels, p.Annotations)
	}
	if ms, _ := b.Members(t.Context(), "scratch"); len(ms) != 1 || ms[0].State != pool.StateClaimed {
		t.Errorf("after the claim: %+v", ms)
	}
}

// TestPoolTakeAfterStatusUpdate: a version moved by a status update, not
// a claim, is read again and the claim goes through.
func TestPoolTakeAfterStatusUpdate(t *testing.T) {
	f := newFakeCluster(t)
	b := poolBackend(t, f)
	m := fill(t, b, 1)[0]
	ms, _ := b.Members(t.Context(), "scratch")
	f.bump(t, m.Name)
	if err := b.Take(t.Context(), ms[0]); err != nil {
		t.Fatalf("Take after a status update: %v", err)
	}
	if f.conflicts.Load() != 1 {
		t.Errorf("conflicts %d, want 1 (the stale version)", f.conflicts.Load())
	}
	// A member without a listed version is read first.
	m2 := fill(t, b, 1)[0]
	m2.Version = ""
	if err := b.Take(t.Context(), m2); err != nil {
		t.Fatalf("Take without a version: %v", err)
	}
	if err := b.Take(t.Context(), m2); !errors.Is(err, pool.ErrTaken) {
		t.Fatalf("Take of a claimed member without a version: %v", err)
	}
	gone := m2
	gone.Name = MemberName("scratch", "0000000000ff")
	if err := b.Take(t.Context(), gone); !errors.Is(err, pool.ErrTaken) {
		t.Fatalf("Take of a missing member: %v", err)
	}
}

// TestPoolConcurrentClaims: many claimers at once on a pool of 5 get 5
// distinct members and the rest an empty pool; none twice.
func TestPoolConcurrentClaims(t *testing.T) {
	f := newFakeCluster(t)
	b := poolBackend(t, f)
	fill(t, b, 5)
	const claimers = 24
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		got   = map[string]int{}
		empty int
		start = make(chan struct{})
	)
	for range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			m, _, err := pool.Claim(t.Context(), b, "scratch", 0)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				got[m.Name]++
			case errors.Is(err, pool.ErrEmpty):
				empty++
			default:
				t.Errorf("Claim: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(got) != 5 || empty != claimers-5 {
		t.Errorf("claimed %v, %d empty; want 5 distinct members and %d empty", got, empty, claimers-5)
	}
	for n, c := range got {
		if c != 1 {
			t.Errorf("member %s handed out %d times", n, c)
		}
	}
	t.Logf("%d patches, %d conflicts", f.patches.Load(), f.conflicts.Load())
}

func TestPoolRemove(t *testing.T) {
	f := newFakeCluster(t)
	b := poolBackend(t, f)
	ms := fill(t, b, 3)
	listed, _ := b.Members(t.Context(), "scratch")
	byName := map[string]pool.Member{}
	for _, m := range listed {
		byName[m.Name] = m
	}
	// A ready member is taken, then deleted with its policy.
	if err := b.Remove(t.Context(), byName[ms[0].Name]); err != nil {
		t.Fatalf("Remove ready: %v", err)
	}
	if _, err := f.cs.CoreV1().Pods("sb").Get(t.Context(), ms[0].Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("removed Pod: %v", err)
	}
	if _, err := f.cs.NetworkingV1().NetworkPolicies("sb").Get(t.Context(), ms[0].Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("removed member's NetworkPolicy: %v", err)
	}
	// A member claimed after it was listed is left alone.
	if err := b.Take(t.Context(), byName[ms[1].Name]); err != nil {
		t.Fatal(err)
	}
	if err := b.Remove(t.Context(), byName[ms[1].Name]); !errors.Is(err, pool.ErrTaken) {
		t.Errorf("Remove of a member claimed since the listing: %v; want ErrTaken", err)
	}
	f.pod(t, ms[1].Name)
	claimed := byName[ms[1].Name]
	claimed.State = pool.StateClaimed
	if err := b.Remove(t.Context(), claimed); !errors.Is(err, pool.ErrTaken) {
		t.Errorf("Remove of a claimed member: %v; want ErrTaken", err)
	}
	// A half-made member (listed starting) is deleted on its version; one
	// whose version moved is read again and deleted all the same.
	half := byName[ms[2].Name]
	half.State = pool.StateStarting
	f.bump(t, half.Name)
	if err := b.Remove(t.Context(), half); err != nil {
		t.Fatalf("Remove half-made: %v", err)
	}
	if _, err := f.cs.CoreV1().Pods("sb").Get(t.Context(), half.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("half-made Pod left: %v", err)
	}
	// Only member names are ever deleted.
	if err := b.Remove(t.Context(), pool.Member{Pool: "scratch", Name: "someone-elses", State: pool.StateFailed}); !errors.Is(err, pool.ErrTaken) {
		t.Errorf("Remove of a non-member name: %v", err)
	}
}

// TestPoolRefillOnCluster runs the shared refiller over the kubernetes
// backend: fill to size, replace a failed member, drain on removal.
func TestPoolRefillOnCluster(t *testing.T) {
	f := newFakeCluster(t)
	b := poolBackend(t, f)
	st, err := pool.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &pool.Refiller{Backend: b, Store: st}
	status, err := r.Reconcile(t.Context(), agentSpec)
	if err != nil || status.Ready != 3 {
		t.Fatalf("Reconcile: %+v, %v", status, err)
	}
	ms, _ := b.Members(t.Context(), "scratch")
	if _, _, err := pool.Claim(t.Context(), b, "scratch", 0); err != nil {
		t.Fatal(err)
	}
	// One member dies.
	p := f.pod(t, ms[0].Name)
	if p.Labels[LabelPoolState] == PoolStateReady {
		p.Status.Phase = corev1.PodFailed
		if err := f.cs.Tracker().Update(podsGVR, p, "sb"); err != nil {
			t.Fatal(err)
		}
	}
	status, err = r.Reconcile(t.Context(), agentSpec)
	if err != nil || status.Ready != 3 || status.Claimed != 1 {
		t.Fatalf("second Reconcile: %+v, %v", status, err)
	}
	if err := r.Drain(t.Context(), "scratch"); err != nil {
		t.Fatal(err)
	}
	ms, _ = b.Members(t.Context(), "scratch")
	if len(ms) != 1 || ms[0].State != pool.StateClaimed {
		t.Errorf("after drain: %+v; want the claimed member only", ms)
	}
	nps, _ := f.cs.NetworkingV1().NetworkPolicies("sb").List(t.Context(), metav1.ListOptions{})
	if len(nps.Items) != 1 {
		t.Errorf("%d NetworkPolicies after drain, want the claimed member's", len(nps.Items))
	}
}

// TestPoolClaimWait: an empty pool is polled for the wait and reported
// empty after it; a member that becomes ready meanwhile is claimed and the
// claim says it waited.
func TestPoolClaimWait(t *testing.T) {
	f := newFakeCluster(t)
	b := poolBackend(t, f)
	_, _, err := pool.Claim(t.Context(), b, "scratch", 120*time.Millisecond)
	var empty *pool.EmptyError
	if !errors.As(err, &empty) || empty.Waited < 120*time.Millisecond || !errors.Is(err, pool.ErrEmpty) {
		t.Fatalf("empty pool: %v", err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		if _, err := b.Create(context.WithoutCancel(t.Context()), agentSpec); err != nil {
			t.Errorf("Create: %v", err)
		}
	}()
	m, waited, err := pool.Claim(t.Context(), b, "scratch", 5*time.Second)
	if err != nil || !waited || m.State != pool.StateReady {
		t.Fatalf("claim during the wait: %+v waited %v, %v", m, waited, err)
	}
	if p := f.pod(t, m.Name); p.Labels[LabelPoolState] != PoolStateClaimed {
		t.Errorf("claimed member labels %v", p.Labels)
	}
}
