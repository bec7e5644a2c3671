package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podbot/podbot/errdefs"
)

const (
	firstToken  = "ghs_first0123456789"
	secondToken = "ghs_second0123456789"
	testOrigin  = "https://github.com"
)

func TestLaunchTokenMountedReadOnlyAndUpdated(t *testing.T) {
	cs := fake.NewClientset()
	runningReactor(cs, corev1.PodRunning, "")
	c := NewForClientset(cs, "sb", Options{})
	ctx := context.Background()
	sb, err := c.Launch(ctx, testPlan(t, nil), LaunchOptions{Secret: SecretData{Token: firstToken, Origin: testOrigin}})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := cs.CoreV1().Pods("sb").Get(ctx, sb.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(pod.String(), firstToken) {
		t.Fatal("the token is in the Pod spec")
	}
	var vol *corev1.Volume
	for i, v := range pod.Spec.Volumes {
		if v.Name == tokenVolume {
			vol = &pod.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.Secret == nil || vol.Secret.SecretName != sb.Name || len(vol.Secret.Items) != 2 {
		t.Fatalf("token volume %+v", vol)
	}
	var mount *corev1.VolumeMount
	for i, m := range pod.Spec.Containers[0].VolumeMounts {
		if m.MountPath == TokenMountPath {
			mount = &pod.Spec.Containers[0].VolumeMounts[i]
		}
	}
	if mount == nil || !mount.ReadOnly || mount.Name != tokenVolume {
		t.Fatalf("token mount %+v", mount)
	}
	s, err := cs.CoreV1().Secrets("sb").Get(ctx, sb.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Immutable != nil && *s.Immutable {
		t.Error("a Secret holding a token is immutable: it could not be refreshed")
	}
	if string(s.Data[SecretTokenKey]) != firstToken || string(s.Data[SecretOriginKey]) != testOrigin+"\n" {
		t.Errorf("secret data %q %q", s.Data[SecretTokenKey], s.Data[SecretOriginKey])
	}
	if err := c.UpdateToken(ctx, sb.Name, secondToken); err != nil {
		t.Fatal(err)
	}
	s, _ = cs.CoreV1().Secrets("sb").Get(ctx, sb.Name, metav1.GetOptions{})
	if string(s.Data[SecretTokenKey]) != secondToken || string(s.Data[SecretOriginKey]) != testOrigin+"\n" {
		t.Errorf("after UpdateToken: %q %q", s.Data[SecretTokenKey], s.Data[SecretOriginKey])
	}
	if err := c.UpdateToken(ctx, sb.Name, "two words"); !errors.Is(err, errdefs.ErrInvalidValue) {
		t.Errorf("a token with a space: err %v, want ErrInvalidValue", err)
	}
	if err := c.WithdrawToken(ctx, sb.Name); err != nil {
		t.Fatal(err)
	}
	s, _ = cs.CoreV1().Secrets("sb").Get(ctx, sb.Name, metav1.GetOptions{})
	if _, ok := s.Data[SecretTokenKey]; ok || string(s.Data[SecretOriginKey]) != testOrigin+"\n" {
		t.Errorf("after WithdrawToken: %v", s.Data)
	}
	if err := c.WithdrawToken(ctx, sb.Name); err != nil {
		t.Errorf("a second WithdrawToken: %v", err)
	}
	if err := c.UpdateToken(ctx, sb.Name, secondToken); !errors.Is(err, errdefs.ErrRefused) {
		t.Errorf("UpdateToken after WithdrawToken: err %v, want ErrRefused", err)
	}
	if err := c.Delete(ctx, sb.Name); err != nil {
		t.Fatal(err)
	}
	assertNoSecret(t, cs)
	if err := c.WithdrawToken(ctx, sb.Name); err != nil {
		t.Errorf("WithdrawToken after Delete: %v", err)
	}
	if err := c.UpdateToken(ctx, sb.Name, secondToken); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("UpdateToken after Delete: err %v, want ErrNotFound", err)
	}
}

func TestUpdateTokenRefusesForeignSecret(t *testing.T) {
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "sb"},
		Data: map[string][]byte{SecretTokenKey: []byte("x")}}
	cs := fake.NewClientset(other)
	c := NewForClientset(cs, "sb", Options{})
	if err := c.UpdateToken(context.Background(), "theirs", secondToken); !errors.Is(err, errdefs.ErrRefused) {
		t.Fatalf("err %v, want ErrRefused", err)
	}
	s, _ := cs.CoreV1().Secrets("sb").Get(context.Background(), "theirs", metav1.GetOptions{})
	if string(s.Data[SecretTokenKey]) != "x" {
		t.Error("a foreign Secret was changed")
	}
}

func TestBuildSecretRefusesBadToken(t *testing.T) {
	pod, err := BuildPod(testPlan(t, nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]SecretData{
		"no origin":     {Token: firstToken},
		"no token":      {Origin: testOrigin},
		"odd origin":    {Token: firstToken, Origin: "https://github.com/x"},
		"newline token": {Token: "a\nb", Origin: testOrigin},
	} {
		if _, err := BuildSecret(pod, d); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	s, err := BuildSecret(pod, SecretData{Env: []string{"A=b"}})
	if err != nil || s.Immutable == nil || !*s.Immutable {
		t.Errorf("a Secret without a token: err %v, immutable %v", err, s.Immutable)
	}
}
