//go:build kubernetes

package podbot

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/localclone"
)

// TestOpenKubeReview: the local-clone labels are read from the Pod's
// annotations (a path is no label value); a Pod that is not running, one
// without the labels and one podbot did not make are refused.
func TestOpenKubeReview(t *testing.T) {
	env := testEnv(t)
	r, _ := execSandbox(t, hostExecIO{env: env}, false)
	info := r.Info
	pod := func(name string, phase corev1.PodPhase, managed bool, ann map[string]string) *corev1.Pod {
		labels := map[string]string{}
		if managed {
			labels[launchplan.LabelManaged] = "true"
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "sb", Labels: labels, Annotations: ann},
			Status: corev1.PodStatus{Phase: phase}}
	}
	cs := fake.NewClientset(
		pod("sb1", corev1.PodRunning, true, info.Labels()),
		pod("ended", corev1.PodSucceeded, true, localclone.Info{Name: "ended", Repo: info.Repo, Base: info.Base, Branch: localclone.Branch("ended"), Dir: info.Dir}.Labels()),
		pod("plain", corev1.PodRunning, true, nil),
		pod("foreign", corev1.PodRunning, false, info.Labels()))
	kc := kube.NewForClientset(cs, "sb", kube.Options{})
	ctx := t.Context()
	got, err := OpenKubeReview(ctx, kc, "sb1", info.Repo, env)
	if err != nil {
		t.Fatal(err)
	}
	if got.Info != info {
		t.Errorf("info %+v, want %+v", got.Info, info)
	}
	if k, ok := got.sio.(kubeCloneIO); !ok || k.name != "sb1" {
		t.Errorf("transport %#v", got.sio)
	}
	if _, err := OpenKubeReview(ctx, kc, "ended", info.Repo, env); !errors.Is(err, errdefs.ErrRefused) || !strings.Contains(err.Error(), "not running") {
		t.Errorf("ended Pod: %v", err)
	}
	if _, err := OpenKubeReview(ctx, kc, "plain", info.Repo, env); !errors.Is(err, errdefs.ErrRefused) || !strings.Contains(err.Error(), "not made from a local repository") {
		t.Errorf("Pod without a clone: %v", err)
	}
	if _, err := OpenKubeReview(ctx, kc, "foreign", info.Repo, env); !errors.Is(err, errdefs.ErrRefused) {
		t.Errorf("foreign Pod: %v", err)
	}
}
