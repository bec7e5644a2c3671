package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

func watchedPod(name string, token bool) *corev1.Pod {
	l := map[string]string{launchplan.LabelManaged: "true"}
	if token {
		l[launchplan.LabelGitHubToken] = "true"
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "sb", Labels: l}}
}

// recv waits for one value on ch, failing the test when none comes.
func recv(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no call for %s", what)
		return ""
	}
}

// none fails when ch holds a value once the hub has dispatched what came
// before (the caller makes a later event and waits for it first).
func none(t *testing.T, ch <-chan string, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s: unexpected call %q", what, v)
	default:
	}
}

func TestPodHubDispatchesByPodAndLabel(t *testing.T) {
	cs := fake.NewClientset()
	c := NewForClientset(cs, "sb", Options{})
	hub := c.NewPodHub(map[string]string{launchplan.LabelGitHubToken: "true"})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	all, one := make(chan string, 16), make(chan string, 16)
	allDone, oneDone := make(chan error, 1), make(chan error, 1)
	go func() { allDone <- hub.WatchAll(ctx, func() { all <- "all" }) }()
	go func() { oneDone <- hub.Watch(ctx, "a", func() { one <- "a" }) }()
	recv(t, all, "the opened watch (all)")
	recv(t, one, "the opened watch (a)")

	pods := cs.CoreV1().Pods("sb")
	// A Pod without the token label is not followed at all.
	if _, err := pods.Create(ctx, watchedPod("plain", false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A token-carrying Pod b reaches WatchAll only.
	if _, err := pods.Create(ctx, watchedPod("b", true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	recv(t, all, "adding b")
	none(t, all, "the Pod without a token")
	none(t, one, "b, followed by name a")
	// Pod a: added and deleted reach both.
	if _, err := pods.Create(ctx, watchedPod("a", true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	recv(t, all, "adding a")
	recv(t, one, "adding a")
	if err := pods.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	recv(t, all, "deleting a")
	recv(t, one, "deleting a")
	cancel()
	for _, ch := range []chan error{allDone, oneDone} {
		if err := <-ch; !errors.Is(err, context.Canceled) {
			t.Errorf("after cancel: %v", err)
		}
	}
}

func TestPodHubWatchFailures(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		cs := fake.NewClientset()
		cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
			return true, nil, errors.New("watch refused")
		})
		hub := NewForClientset(cs, "sb", Options{}).NewPodHub(nil)
		called := false
		err := hub.Watch(t.Context(), "a", func() { called = true })
		if err == nil || called {
			t.Fatalf("a refused watch: %v, called %v", err, called)
		}
	})
	t.Run("ended by the server", func(t *testing.T) {
		cs := fake.NewClientset()
		fw := watch.NewFake()
		cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, fw, nil })
		hub := NewForClientset(cs, "sb", Options{}).NewPodHub(nil)
		opened := make(chan string, 1)
		done := make(chan error, 1)
		go func() { done <- hub.WatchAll(t.Context(), func() { opened <- "open" }) }()
		recv(t, opened, "the opened watch")
		fw.Stop()
		if err := <-done; !errors.Is(err, errdefs.ErrUnavailable) {
			t.Fatalf("a watch the server ended: %v, want unavailable", err)
		}
	})
	t.Run("error event", func(t *testing.T) {
		cs := fake.NewClientset()
		fw := watch.NewFake()
		cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, fw, nil })
		hub := NewForClientset(cs, "sb", Options{}).NewPodHub(nil)
		opened := make(chan string, 1)
		done := make(chan error, 1)
		go func() { done <- hub.Watch(t.Context(), "a", func() { opened <- "open" }) }()
		recv(t, opened, "the opened watch")
		fw.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old"})
		if err := <-done; err == nil {
			t.Fatal("an error event did not end the watch")
		}
	})
	if err := NewForClientset(fake.NewClientset(), "sb", Options{}).NewPodHub(nil).Watch(t.Context(), "", func() {}); !errors.Is(err, errdefs.ErrInvalidValue) {
		t.Errorf("no Pod name: %v", err)
	}
}
