//go:build kubernetes

package podbot

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/pool"
)

func TestMemberPrefixesAgree(t *testing.T) {
	if kube.MemberPrefix != MemberPrefix {
		t.Fatalf("kube.MemberPrefix %q, podbot.MemberPrefix %q", kube.MemberPrefix, MemberPrefix)
	}
}

// TestClaimOnKubernetes: a pool of one on a fake cluster gives a warm
// claim (the member Pod, now labelled claimed), then a cold create from
// the pool's template; what a claim cannot apply is refused.
func TestClaimOnKubernetes(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		p.Status.Phase = corev1.PodRunning // no kubelet: running at once
		return false, nil, nil
	})
	kc := kube.NewForClientset(cs, "sb", kube.Options{})
	cfg := config.Default()
	cfg.Network.Mode = config.NetworkNone
	spec := pool.Spec{Name: "scratch", Kind: pool.KindAgent, Size: 1, Backend: pool.BackendKubernetes}
	b := NewKubePoolBackend(kc, PoolOptions{Config: cfg})
	m, err := b.Create(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	res, err := CreateOnKubernetes(t.Context(), kc, CreateOptions{Config: cfg, Pool: &spec})
	if err != nil {
		t.Fatal(err)
	}
	if res.Name != m.Name || res.Claim == nil || res.Claim.Outcome != ClaimWarm {
		t.Fatalf("warm claim %+v %+v, want member %s", res, res.Claim, m.Name)
	}
	p, err := cs.CoreV1().Pods("sb").Get(t.Context(), m.Name, metav1.GetOptions{})
	if err != nil || p.Labels[kube.LabelPoolState] != kube.PoolStateClaimed {
		t.Fatalf("claimed Pod %v, %v", p.Labels, err)
	}
	res, err = CreateOnKubernetes(t.Context(), kc, CreateOptions{Config: cfg, Pool: &spec})
	if err != nil || res.Claim == nil || res.Claim.Outcome != ClaimCold || res.Name == m.Name {
		t.Fatalf("cold claim %+v, %v", res, err)
	}
	p, err = cs.CoreV1().Pods("sb").Get(t.Context(), res.Name, metav1.GetOptions{})
	if err != nil || p.Labels[launchplan.LabelPool] != "scratch" || p.Labels[kube.LabelPoolState] != kube.PoolStateClaimed {
		t.Fatalf("cold Pod labels %v, %v", p.Labels, err)
	}
	for name, opts := range map[string]CreateOptions{
		"name":    {Config: cfg, Pool: &spec, Name: "mine"},
		"command": {Config: cfg, Pool: &spec, Command: []string{"sleep", "1"}},
		"engine":  {Config: cfg, Pool: &pool.Spec{Name: "eng", Kind: pool.KindAgent, Size: 1}},
		"tools":   {Config: cfg, Pool: &pool.Spec{Name: "t", Kind: pool.KindTools, Size: 1, Backend: pool.BackendKubernetes}},
	} {
		var ce *errdefs.ConfigError
		if _, err := CreateOnKubernetes(t.Context(), kc, opts); !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a ConfigError", name, err)
		}
	}
}
