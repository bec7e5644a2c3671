package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/fanout"
	"github.com/podbot/podbot/launchplan"
)

// PodHub follows podbot's Pods in the namespace over one watch of the API
// server (pods, filtered by label): Watch tells a caller about one Pod's
// changes, WatchAll about every Pod's, and every caller shares the one
// watch instead of opening its own. The watch opens with the first caller
// and closes with the last; when the API server refuses or ends it, every
// caller's Watch or WatchAll returns the error and the next call opens a
// new one (fanout.Hub). A PodHub is safe for concurrent use.
type PodHub struct {
	c   *Client
	sel labels.Selector
	hub *fanout.Hub[string] // events carry the Pod's name
}

// NewPodHub returns a hub that follows the Pods of the client's namespace
// labelled podbot.managed=true and with every label of match.
func (c *Client) NewPodHub(match map[string]string) *PodHub {
	set := labels.Set{launchplan.LabelManaged: "true"}
	for k, v := range match {
		set[k] = v
	}
	h := &PodHub{c: c, sel: labels.SelectorFromSet(set)}
	h.hub = fanout.New(h.stream)
	return h
}

// Watch follows the one Pod name: changed runs once the shared watch is
// accepted (so the caller checks the Pod then and misses nothing before)
// and again after each event for that Pod (added, modified, deleted).
// changed may run on the hub's goroutine and must not block for long.
//
// Watch returns ctx.Err() once ctx ends, or the watch's classified error
// (errdefs.ErrUnavailable when the API server ended it) when the shared
// watch fails or ends.
func (h *PodHub) Watch(ctx context.Context, name string, changed func()) error {
	if name == "" {
		return &errdefs.ContainerError{Op: "kubernetes watch", Reason: errdefs.ErrInvalidValue,
			Msg: "a Pod name is required to follow its events"}
	}
	return h.follow(ctx, name, changed)
}

// WatchAll is Watch for every Pod the hub follows: changed runs once the
// watch is accepted and after each event for any of them.
func (h *PodHub) WatchAll(ctx context.Context, changed func()) error {
	return h.follow(ctx, "", changed)
}

// follow is Watch (name set) and WatchAll (name empty).
func (h *PodHub) follow(ctx context.Context, name string, changed func()) error {
	if changed == nil {
		return &errdefs.ContainerError{Op: "kubernetes watch", Container: name, Reason: errdefs.ErrInvalidValue,
			Msg: "a callback is required to follow Pod events"}
	}
	return h.hub.Watch(ctx, func(pod string) bool { return name == "" || name == pod }, changed)
}

// stream is the hub's source: one watch of the Pods, each event's Pod
// name emitted, until ctx ends or the watch fails or ends.
func (h *PodHub) stream(ctx context.Context, ready func(), emit func(string)) error {
	w, err := h.c.cs.CoreV1().Pods(h.c.namespace).Watch(ctx, metav1.ListOptions{LabelSelector: h.sel.String()})
	if err != nil {
		return h.c.classify("watch", "", err)
	}
	defer w.Stop()
	ready()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return &errdefs.ContainerError{Op: "kubernetes watch", Reason: errdefs.ErrUnavailable,
					Msg: "the API server ended the watch of podbot's Pods"}
			}
			switch ev.Type {
			case watch.Error:
				return h.c.classify("watch", "", apierrors.FromObject(ev.Object))
			case watch.Added, watch.Modified, watch.Deleted:
				pod, ok := ev.Object.(*corev1.Pod)
				if !ok || !h.sel.Matches(labels.Set(pod.Labels)) {
					continue
				}
				emit(pod.Name)
			}
		}
	}
}
