package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// callTimeout bounds one API call that is not a stream.
const callTimeout = 30 * time.Second

// pollInterval is how often Create looks at a starting Pod.
const pollInterval = 100 * time.Millisecond

// Sandbox is one podbot Pod as the operator commands show it.
type Sandbox struct {
	// UID is the Pod's uid.
	UID string
	// Name is the Pod's name.
	Name string
	// Image is the sandbox container's image.
	Image string
	// Phase is the Pod's phase (Pending, Running, Succeeded, Failed).
	Phase corev1.PodPhase
	// Reason is why the sandbox container waits or ended, when it does.
	Reason string
	// Created is the Pod's creation time.
	Created time.Time
	// Labels are the Pod's labels; Annotations hold every podbot label.
	Labels, Annotations map[string]string
	// Deleting is set once the Pod is being deleted (it has a deletion
	// timestamp), though it may still run for its grace period.
	Deleting bool
}

// Managed reports whether podbot created the Pod.
func (s Sandbox) Managed() bool { return s.Labels[launchplan.LabelManaged] == "true" }

// Running reports whether the Pod runs.
func (s Sandbox) Running() bool { return s.Phase == corev1.PodRunning }

func sandboxOf(p *corev1.Pod) Sandbox {
	s := Sandbox{UID: string(p.UID), Name: p.Name, Phase: p.Status.Phase, Created: p.CreationTimestamp.Time,
		Labels: p.Labels, Annotations: p.Annotations}
	if len(p.Spec.Containers) > 0 {
		s.Image = p.Spec.Containers[0].Image
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			s.Reason = w.Reason
		}
		if t := cs.State.Terminated; t != nil {
			s.Reason = fmt.Sprintf("%s (exit %d)", t.Reason, t.ExitCode)
		}
	}
	if p.DeletionTimestamp != nil {
		s.Reason, s.Deleting = "Terminating", true
	}
	return s
}

// Create creates the plan's NetworkPolicy and Pod and waits until the Pod
// runs. The API calls run on a context detached from ctx's cancellation;
// when ctx ends, the start deadline passes, the Pod cannot start (an image
// that cannot be pulled, a refused spec) or anything else fails, both
// objects are deleted before Create returns its error, so a failed or
// interrupted Create leaves nothing behind. opts change the Pod BuildPod
// made before it is created.
func (c *Client) Create(ctx context.Context, plan launchplan.Plan, opts ...PodOption) (sb Sandbox, err error) {
	return c.create(ctx, plan, nil, nil, opts...)
}

// create is Create; with sc set, the Pod also gets the sidecar streamed in
// (withSidecarInstall) before its sandbox container starts; with v set
// (an allowlist plan only), the proxy gets the credential vault and the
// Pod its trust files (WithVaultTrust).
func (c *Client) create(ctx context.Context, plan launchplan.Plan, sc *Sidecar, v *EgressVault, opts ...PodOption) (Sandbox, error) {
	pod, err := BuildPod(plan, c.opts)
	if err != nil {
		return Sandbox{}, err
	}
	for _, o := range opts {
		if err := o(pod); err != nil {
			return Sandbox{}, err
		}
	}
	np := BuildNetworkPolicy(pod, plan.Egress.Mode)
	if plan.Network == "none" {
		np = BuildNetworkPolicy(pod, egress.ModeNone)
	}
	if v != nil {
		if plan.Egress.Mode != egress.ModeAllowlist || np.Spec.Egress == nil {
			return Sandbox{}, &errdefs.ConfigError{Key: "network.mode", Reason: errdefs.ErrConflict,
				Msg: "the credential vault ([[secrets]]) is held by the egress proxy and needs network.mode = \"allowlist\""}
		}
		if err := WithVaultTrust(pod.Name)(pod); err != nil {
			return Sandbox{}, err
		}
	}
	wait := func(ctx context.Context) (*corev1.Pod, error) { return c.waitRunning(ctx, pod.Name) }
	if sc != nil {
		withSidecarInstall(pod)
		wait = c.installThenRun(pod.Name, sc)
	}
	if hasTokenContainer(pod) {
		wait = c.thenTokenRunning(pod.Name, wait)
	}
	return c.createObjects(ctx, pod, np, plan.Egress, v, wait)
}

// createObjects creates np, then pod, makes the Pod the policy's owner and
// waits with wait until the Pod runs. In mode allowlist (eg.Mode) it
// first makes the sandbox's egress proxy (startEgress), points the Pod at
// it and makes the Pod the owner of the proxy's objects too. When anything
// fails or ctx ends, everything it made is deleted before it returns.
func (c *Client) createObjects(ctx context.Context, pod *corev1.Pod, np *networkingv1.NetworkPolicy, eg launchplan.Egress, v *EgressVault, wait func(context.Context) (*corev1.Pod, error)) (sb Sandbox, err error) {
	dctx := context.WithoutCancel(ctx)
	podMade, policyMade, egressMade := false, false, false
	defer func() {
		if err != nil && (podMade || policyMade || egressMade) {
			cctx, cancel := context.WithTimeout(dctx, callTimeout)
			defer cancel()
			if rerr := c.deleteObjects(cctx, pod.Name, podMade, policyMade); rerr != nil {
				err = errors.Join(err, rerr)
			}
			if egressMade {
				if rerr := c.deleteEgress(cctx, pod.Name); rerr != nil {
					err = errors.Join(err, rerr)
				}
			}
		}
	}()
	if eg.Mode == egress.ModeAllowlist && np.Spec.Egress != nil {
		egressMade = true
		addr, err := c.startEgress(ctx, pod, eg, v)
		if err != nil {
			return Sandbox{}, err
		}
		withEgressProxy(pod, addr)
	}
	// The policy exists before the Pod, so the Pod never runs without it.
	cctx, cancel := context.WithTimeout(dctx, callTimeout)
	defer cancel()
	if _, err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).Create(cctx, np, metav1.CreateOptions{}); err != nil {
		return Sandbox{}, c.classify("create network policy", pod.Name, err)
	}
	policyMade = true
	got, err := c.cs.CoreV1().Pods(c.namespace).Create(cctx, pod, metav1.CreateOptions{})
	if err != nil {
		// Only our own policy goes: a Pod of that name may belong to someone else.
		return Sandbox{}, c.classify("create", pod.Name, err)
	}
	podMade = true
	// The policy goes with its Pod when the Pod is deleted by anyone.
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: got.Name, UID: got.UID}
	np.OwnerReferences = []metav1.OwnerReference{owner}
	if cur, gerr := c.cs.NetworkingV1().NetworkPolicies(c.namespace).Get(cctx, np.Name, metav1.GetOptions{}); gerr == nil {
		cur.OwnerReferences = np.OwnerReferences
		_, _ = c.cs.NetworkingV1().NetworkPolicies(c.namespace).Update(cctx, cur, metav1.UpdateOptions{})
	}
	if egressMade {
		if err := c.ownEgress(cctx, pod.Name, owner, v != nil); err != nil {
			return Sandbox{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return Sandbox{}, c.classify("create", pod.Name, err)
	}
	run, err := wait(ctx)
	if err != nil {
		return Sandbox{}, err
	}
	return sandboxOf(run), nil
}

// waitRunning polls the Pod until it runs, failing fast when it cannot.
func (c *Client) waitRunning(ctx context.Context, name string) (*corev1.Pod, error) {
	limit := c.opts.StartTimeout
	if limit <= 0 {
		limit = DefaultStartTimeout
	}
	deadline := time.Now().Add(limit)
	for {
		gctx, cancel := context.WithTimeout(ctx, callTimeout)
		pod, err := c.cs.CoreV1().Pods(c.namespace).Get(gctx, name, metav1.GetOptions{})
		cancel()
		if err != nil {
			return nil, c.classify("create", name, err)
		}
		if pod.Status.Phase == corev1.PodRunning {
			return pod, nil
		}
		if err := startFailure(pod); err != nil {
			return nil, &errdefs.ContainerError{Op: "kubernetes create", Container: name, Reason: errdefs.ErrUnavailable,
				Msg: "the Pod cannot start: " + err.Error(), Hint: "the Pod was deleted"}
		}
		if time.Now().After(deadline) {
			return nil, &errdefs.ContainerError{Op: "kubernetes create", Container: name, Reason: errdefs.ErrTimeout,
				Msg:  fmt.Sprintf("the Pod was not Running after %s (phase %s: %s)", limit, pod.Status.Phase, podReasons(pod)),
				Hint: "the Pod was deleted; check kubernetes.node_selector, kubernetes.runtime_class and the namespace's quota"}
		}
		select {
		case <-ctx.Done():
			return nil, c.classify("create", name, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// imageReasons are container waiting reasons that never resolve by waiting.
var fatalReasons = map[string]bool{
	"ErrImageNeverPull": true, "ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
	"CrashLoopBackOff": true,
}

// startFailure reports why a Pod will never run, or nil while it may.
func startFailure(pod *corev1.Pod) error {
	switch pod.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		return fmt.Errorf("it ended (%s) before running: %s", pod.Status.Phase, podReasons(pod))
	}
	// An init container that failed (the vault's copy, the trust files)
	// would only be retried in a Pod that restarts its containers.
	for _, cs := range pod.Status.InitContainerStatuses {
		t := cs.State.Terminated
		if t == nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" {
			t = cs.LastTerminationState.Terminated
		}
		if t != nil && t.ExitCode != 0 {
			return fmt.Errorf("init container %s failed (exit %d, %s): %s", cs.Name, t.ExitCode, t.Reason, bounded(t.Message))
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && fatalReasons[w.Reason] {
			msg := w.Reason + ": " + bounded(w.Message)
			if strings.HasPrefix(w.Reason, "ErrImage") || strings.Contains(w.Reason, "Image") {
				msg = fmt.Sprintf("image %q cannot be pulled (%s); check the image name and kubernetes.image_pull_policy", cs.Image, msg)
			}
			return errors.New(msg)
		}
	}
	return nil
}

// podReasons summarizes why a Pod is not running.
func podReasons(pod *corev1.Pod) string {
	var parts []string
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue && (c.Reason != "" || c.Message != "") {
			parts = append(parts, fmt.Sprintf("%s: %s", c.Reason, bounded(c.Message)))
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			parts = append(parts, fmt.Sprintf("%s: %s", w.Reason, bounded(w.Message)))
		}
		if t := cs.State.Terminated; t != nil {
			parts = append(parts, fmt.Sprintf("exit %d, %s", t.ExitCode, t.Reason))
		}
	}
	if len(parts) == 0 {
		return "no reason given"
	}
	return strings.Join(parts, "; ")
}

// bounded keeps a message from the cluster short and free of control characters.
func bounded(s string) string {
	const max = 300
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// deleteObjects deletes the sandbox's Pod (when pod is set) and its
// NetworkPolicy (when policy is set); missing ones are not an error.
func (c *Client) deleteObjects(ctx context.Context, name string, pod, policy bool) error {
	var errs []error
	grace := int64(0)
	if pod {
		if err := c.cs.CoreV1().Pods(c.namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, c.classify("delete", name, err))
		}
	}
	if !policy {
		return errors.Join(errs...)
	}
	if err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, c.classify("delete network policy", name, err))
	}
	return errors.Join(errs...)
}

// Get looks a sandbox up by Pod name. Pods podbot did not create are
// refused (errdefs.ErrRefused) unless allowForeign is set.
func (c *Client) Get(ctx context.Context, name string, allowForeign bool) (Sandbox, error) {
	if errs := checkPodName(name); errs != "" {
		return Sandbox{}, &errdefs.ContainerError{Op: "kubernetes resolve", Container: bounded(name), Reason: errdefs.ErrInvalidValue,
			Msg: errs, Hint: "list podbot's sandboxes with `podbot ps -a`"}
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	pod, err := c.cs.CoreV1().Pods(c.namespace).Get(cctx, name, metav1.GetOptions{})
	if err != nil {
		err = c.classify("resolve", name, err)
		var ce *errdefs.ContainerError
		if errors.As(err, &ce) && errors.Is(err, errdefs.ErrNotFound) {
			ce.Msg, ce.Hint = fmt.Sprintf("no Pod %q in namespace %q", name, c.namespace), "list podbot's sandboxes with `podbot ps -a`"
		}
		return Sandbox{}, err
	}
	sb := sandboxOf(pod)
	if !allowForeign && !sb.Managed() {
		return Sandbox{}, &errdefs.ContainerError{Op: "kubernetes resolve", Container: name, Reason: errdefs.ErrRefused,
			Msg: "Pod " + name + " was not created by podbot (no " + launchplan.LabelManaged + "=true label)", Hint: "pass --any to act on it anyway"}
	}
	return sb, nil
}

// checkPodName checks a Pod name given on the command line.
func checkPodName(name string) string {
	if name == "" || len(name) > 253 {
		return "a Pod name is 1-253 characters"
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return "a Pod name holds lower-case letters, digits, '-' and '.' only"
		}
	}
	return ""
}

// RemoveOptions are the inputs of Remove.
type RemoveOptions struct {
	// Force removes a running Pod.
	Force bool
	// Any allows a Pod podbot did not create.
	Any bool
}

// Remove deletes a sandbox's Pod, NetworkPolicy and Secret (podbot run and
// host make one) and, for an allowlist sandbox, its egress proxy's Pod,
// ConfigMap and NetworkPolicy. A running Pod needs Force.
func (c *Client) Remove(ctx context.Context, name string, opts RemoveOptions) (Sandbox, error) {
	sb, err := c.Get(ctx, name, opts.Any)
	if err != nil {
		return Sandbox{}, err
	}
	if (sb.Running() || sb.Phase == corev1.PodPending) && !opts.Force {
		return Sandbox{}, &errdefs.ContainerError{Op: "kubernetes rm", Container: name, Reason: errdefs.ErrConflict,
			Msg: "the Pod is " + strings.ToLower(string(sb.Phase)), Hint: "pass -f to delete it anyway"}
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	// A Pod podbot did not create (--any) has no policy or Secret of
	// podbot's: one of the same name is someone else's.
	err = c.deleteObjects(cctx, name, true, sb.Managed())
	if sb.Managed() {
		err = errors.Join(err, c.deleteOwnSecret(cctx, name, sb.Labels[launchplan.LabelSession]), c.deleteEgress(cctx, name))
	}
	return sb, err
}

// ListOptions select the Pods List returns.
type ListOptions struct {
	// All includes Pods that are not running.
	All bool
	// Labels are extra label filters (an empty value matches the key alone).
	Labels map[string]string
}

// List returns podbot's Pods (label podbot.managed=true) in the namespace,
// newest first, in one API call.
func (c *Client) List(ctx context.Context, opts ListOptions) ([]Sandbox, error) {
	sel := labels.Set{launchplan.LabelManaged: "true"}
	var extra []string
	for k, v := range opts.Labels {
		if v == "" {
			extra = append(extra, k)
			continue
		}
		sel[k] = v
	}
	selector := sel.String()
	for _, k := range extra {
		selector += "," + k
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	pods, err := c.cs.CoreV1().Pods(c.namespace).List(cctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, c.classify("list", "", err)
	}
	out := make([]Sandbox, 0, len(pods.Items))
	for i := range pods.Items {
		sb := sandboxOf(&pods.Items[i])
		if opts.All || sb.Running() {
			out = append(out, sb)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out, nil
}
