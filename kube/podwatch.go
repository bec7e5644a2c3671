package kube

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// PodHub follows podbot's Pods in the namespace over one watch of the API
// server (pods, filtered by label): Watch tells a caller about one Pod's
// changes, WatchAll about every Pod's, and every caller shares the one
// watch instead of opening its own. The watch opens with the first caller
// and closes with the last; when the API server refuses or ends it, every
// caller's Watch or WatchAll returns the error and the next call opens a
// new one. A PodHub is safe for concurrent use.
type PodHub struct {
	c   *Client
	sel labels.Selector

	mu  sync.Mutex
	cur *podStream // the watch callers join; nil when none runs
}

// podStream is one watch and the callers that use it.
type podStream struct {
	cancel context.CancelFunc
	ready  chan struct{} // closed once the API server accepted the watch
	done   chan struct{} // closed when the watch ended; err is set before
	err    error

	joined int                      // callers using the watch, waiting ones too
	live   map[*podWatcher]struct{} // callers events are dispatched to
}

// podWatcher is one Watch (name set) or WatchAll (name empty) call.
type podWatcher struct {
	name    string
	changed func()
}

// NewPodHub returns a hub that follows the Pods of the client's namespace
// labelled podbot.managed=true and with every label of match.
func (c *Client) NewPodHub(match map[string]string) *PodHub {
	set := labels.Set{launchplan.LabelManaged: "true"}
	for k, v := range match {
		set[k] = v
	}
	return &PodHub{c: c, sel: labels.SelectorFromSet(set)}
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

func (h *PodHub) follow(ctx context.Context, name string, changed func()) error {
	if changed == nil {
		return &errdefs.ContainerError{Op: "kubernetes watch", Container: name, Reason: errdefs.ErrInvalidValue,
			Msg: "a callback is required to follow Pod events"}
	}
	s := h.join()
	defer h.leave(s)
	select {
	case <-s.ready:
	case <-s.done:
		return h.result(ctx, s)
	case <-ctx.Done():
		return ctx.Err()
	}
	w := &podWatcher{name: name, changed: changed}
	h.mu.Lock()
	select {
	case <-s.done:
		h.mu.Unlock()
		return h.result(ctx, s)
	default:
	}
	s.live[w] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(s.live, w)
		h.mu.Unlock()
	}()
	// Registered first, then told: a change between the watch's start and
	// the registration is seen by the caller's check now.
	changed()
	select {
	case <-s.done:
		return h.result(ctx, s)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// result is what a caller gets once its watch ended.
func (h *PodHub) result(ctx context.Context, s *podStream) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return s.err
}

// join returns the running watch, starting one if none runs or the last
// one ended, and counts the caller in.
func (h *PodHub) join() *podStream {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.cur; s != nil {
		select {
		case <-s.done:
		default:
			s.joined++
			return s
		}
	}
	// The watch outlives any one caller's context: it ends when the last
	// caller leaves.
	ctx, cancel := context.WithCancel(context.Background())
	s := &podStream{cancel: cancel, ready: make(chan struct{}), done: make(chan struct{}),
		joined: 1, live: map[*podWatcher]struct{}{}}
	h.cur = s
	go h.run(ctx, s)
	return s
}

// leave counts the caller out; the last one out ends the watch.
func (h *PodHub) leave(s *podStream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.joined--
	if s.joined == 0 {
		s.cancel()
		if h.cur == s {
			h.cur = nil
		}
	}
}

// run opens the watch and dispatches its events until ctx ends or the
// watch fails or ends.
func (h *PodHub) run(ctx context.Context, s *podStream) {
	err := h.stream(ctx, s)
	h.mu.Lock()
	s.err = err
	close(s.done)
	h.mu.Unlock()
	s.cancel()
}

func (h *PodHub) stream(ctx context.Context, s *podStream) error {
	w, err := h.c.cs.CoreV1().Pods(h.c.namespace).Watch(ctx, metav1.ListOptions{LabelSelector: h.sel.String()})
	if err != nil {
		return h.c.classify("watch", "", err)
	}
	defer w.Stop()
	close(s.ready)
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
				h.dispatch(s, pod.Name)
			}
		}
	}
}

// dispatch calls the callers following name, and those following every Pod.
func (h *PodHub) dispatch(s *podStream, name string) {
	h.mu.Lock()
	var hit []func()
	for w := range s.live {
		if w.name == "" || w.name == name {
			hit = append(hit, w.changed)
		}
	}
	h.mu.Unlock()
	for _, changed := range hit {
		changed()
	}
}
