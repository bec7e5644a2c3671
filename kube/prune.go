package kube

import (
	"context"
	"errors"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/launchplan"
)

// DefaultPruneGrace keeps Prune away from what another podbot is still
// making: a Pod that may yet start, a pool member not ready yet, or an
// object whose Pod is not created yet is pruned only once it is older. It
// is the engine's grace for containers in state created.
const DefaultPruneGrace = time.Minute

// Kinds of the orphans Prune reports.
const (
	KindNetworkPolicy = "NetworkPolicy"
	KindSecret        = "Secret"
)

// PruneOptions are the inputs of Client.Prune.
type PruneOptions struct {
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
	// Grace is how old a stuck Pod, a half-made pool member or an orphan
	// must be; 0 means DefaultPruneGrace. An ended Pod needs no grace.
	Grace time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Orphan is one object of podbot's whose sandbox Pod is gone.
type Orphan struct {
	// Kind is KindNetworkPolicy or KindSecret.
	Kind string
	// Name is the object's name (its sandbox's name).
	Name string
}

// PruneResult lists what Prune removed, or with DryRun would remove.
type PruneResult struct {
	// Pods are podbot's sandbox Pods that ended, cannot start, or are
	// pool members left half-made; each went with its NetworkPolicy,
	// Secret and egress proxy.
	Pods []Sandbox
	// Egress are the sandboxes (names) whose egress proxy objects (Pod,
	// ConfigMap, NetworkPolicy, vault Secret) were left without their sandbox Pod.
	Egress []string
	// Orphans are sandbox NetworkPolicies and Secrets left without their
	// Pod.
	Orphans []Orphan
}

// Prune removes podbot's leftovers in the namespace, each only when its
// labels say podbot made it:
//
//   - sandbox Pods (podbot.managed=true) that ended (Succeeded, Failed);
//     Pending ones that cannot start (an image that cannot be pulled, a
//     crash loop) older than the grace, or still Pending past the start
//     deadline and the grace; pool members never made ready (ready but
//     not Running) or taken for removal by a refiller that died, older
//     than the grace. Each goes with its NetworkPolicy, Secret and egress
//     proxy (Client.Remove's set).
//   - sandbox NetworkPolicies and Secrets (podbot.managed=true) older than
//     the grace whose Pod of the same name and session does not exist:
//     their owner reference makes the garbage collector delete them with
//     their Pod, but a create interrupted before it set one leaves them.
//   - egress proxy Pods, ConfigMaps, NetworkPolicies and vault Secrets
//     (podbot.egress.role = proxy) whose sandbox Pod does not exist, once all of a sandbox's
//     are older than the grace plus twice the start deadline (a proxy is
//     made and started before its sandbox Pod).
//
// A running sandbox, a ready pool member and a Pod being deleted are never
// touched; a Pod is deleted on the precondition that it did not change
// since it was listed (one that did is left for the next prune). A failed
// deletion does not stop the others; the failures are returned joined, and
// the result lists only what was removed.
func (c *Client) Prune(ctx context.Context, opts PruneOptions) (PruneResult, error) {
	res := PruneResult{Pods: []Sandbox{}, Egress: []string{}, Orphans: []Orphan{}}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	grace := opts.Grace
	if grace <= 0 {
		grace = DefaultPruneGrace
	}
	start := c.opts.StartTimeout
	if start <= 0 {
		start = DefaultStartTimeout
	}
	t := now()
	old := func(m metav1.ObjectMeta, d time.Duration) bool { return t.Sub(m.CreationTimestamp.Time) >= d }

	// Each list has a call's time of its own: deletions come between.
	call := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, callTimeout) }
	managed := metav1.ListOptions{LabelSelector: labels.Set{launchplan.LabelManaged: "true"}.String()}
	proxies := metav1.ListOptions{LabelSelector: labels.Set{egressnet.LabelRole: egressnet.RoleProxy}.String()}
	cctx, cancel := call()
	pods, err := c.cs.CoreV1().Pods(c.namespace).List(cctx, managed)
	cancel()
	if err != nil {
		return res, c.classify("list", "", err)
	}
	// Every managed Pod, pruned or not, is its objects' Pod: a pruned
	// Pod's objects go with it.
	sessions := map[string]string{}
	for i := range pods.Items {
		p := &pods.Items[i]
		sessions[p.Name] = p.Labels[launchplan.LabelSession]
	}
	var errs []error
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || !prunablePod(p, old, grace, start) {
			continue
		}
		if !opts.DryRun {
			gone, err := c.prunePod(ctx, p)
			if err != nil {
				errs = append(errs, err)
			}
			if !gone {
				continue
			}
		}
		res.Pods = append(res.Pods, sandboxOf(p))
	}
	sort.SliceStable(res.Pods, func(i, j int) bool { return res.Pods[i].Name < res.Pods[j].Name })

	orphan := func(m metav1.ObjectMeta) bool {
		session, ok := sessions[m.Name]
		return old(m, grace) && m.DeletionTimestamp == nil && (!ok || session != m.Labels[launchplan.LabelSession])
	}
	cctx, cancel = call()
	nps, err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).List(cctx, managed)
	cancel()
	if err != nil {
		errs = append(errs, c.classify("list network policies", "", err))
	} else {
		for _, np := range nps.Items {
			if orphan(np.ObjectMeta) {
				errs = c.pruneOrphan(ctx, opts.DryRun, KindNetworkPolicy, np.ObjectMeta, &res, errs)
			}
		}
	}
	cctx, cancel = call()
	secrets, err := c.cs.CoreV1().Secrets(c.namespace).List(cctx, managed)
	cancel()
	if err != nil {
		errs = append(errs, c.classify("list secrets", "", err))
	} else {
		for _, s := range secrets.Items {
			if orphan(s.ObjectMeta) {
				errs = c.pruneOrphan(ctx, opts.DryRun, KindSecret, s.ObjectMeta, &res, errs)
			}
		}
	}
	sort.SliceStable(res.Orphans, func(i, j int) bool {
		a, b := res.Orphans[i], res.Orphans[j]
		return a.Kind < b.Kind || a.Kind == b.Kind && a.Name < b.Name
	})

	// Egress objects: per sandbox, orphaned only when every one is old
	// enough and none is being deleted already.
	egressGrace := grace + 2*start
	left := map[string]bool{}
	note := func(m metav1.ObjectMeta) {
		sb := m.Labels[egressnet.LabelSandbox]
		if sb == "" || m.Name != EgressName(sb) {
			return // not shaped as podbot names it: not ours to judge
		}
		ok, seen := left[sb]
		left[sb] = (!seen || ok) && old(m, egressGrace) && m.DeletionTimestamp == nil
	}
	cctx, cancel = call()
	defer cancel()
	if l, err := c.cs.CoreV1().Pods(c.namespace).List(cctx, proxies); err != nil {
		errs = append(errs, c.classify("list egress proxies", "", err))
		left = nil
	} else {
		for _, p := range l.Items {
			note(p.ObjectMeta)
		}
	}
	if l, err := c.cs.CoreV1().ConfigMaps(c.namespace).List(cctx, proxies); err != nil {
		errs = append(errs, c.classify("list egress config maps", "", err))
		left = nil
	} else {
		for _, m := range l.Items {
			note(m.ObjectMeta)
		}
	}
	if l, err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).List(cctx, proxies); err != nil {
		errs = append(errs, c.classify("list egress network policies", "", err))
		left = nil
	} else {
		for _, np := range l.Items {
			note(np.ObjectMeta)
		}
	}
	if l, err := c.cs.CoreV1().Secrets(c.namespace).List(cctx, proxies); err != nil {
		errs = append(errs, c.classify("list egress vault secrets", "", err))
		left = nil
	} else {
		for _, s := range l.Items {
			note(s.ObjectMeta)
		}
	}
	for sb, ok := range left {
		if _, live := sessions[sb]; live || !ok {
			continue
		}
		if !opts.DryRun {
			dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
			err := c.deleteEgress(dctx, sb)
			dcancel()
			if err != nil {
				errs = append(errs, err)
				continue
			}
		}
		res.Egress = append(res.Egress, sb)
	}
	sort.Strings(res.Egress)
	return res, errors.Join(errs...)
}

// prunablePod reports whether managed Pod p is a leftover (see Prune).
func prunablePod(p *corev1.Pod, old func(metav1.ObjectMeta, time.Duration) bool, grace, start time.Duration) bool {
	switch p.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return true
	}
	if poolName := p.Labels[launchplan.LabelPool]; poolName != "" && isMemberName(poolName, p.Name) {
		switch p.Labels[LabelPoolState] {
		case PoolStateRemoving:
			return old(p.ObjectMeta, grace)
		case PoolStateReady:
			return p.Status.Phase != corev1.PodRunning && old(p.ObjectMeta, grace)
		}
		// A claimed member is an ordinary sandbox.
	}
	if p.Status.Phase == corev1.PodRunning {
		return false
	}
	// Pending (or no phase yet).
	return startFailure(p) != nil && old(p.ObjectMeta, grace) || old(p.ObjectMeta, start+grace)
}

// prunePod deletes sandbox Pod p on the precondition of its uid and
// resourceVersion, then its NetworkPolicy, Secret and egress proxy. It
// reports whether the Pod is gone: one that changed since it was listed
// is left, without an error.
func (c *Client) prunePod(ctx context.Context, p *corev1.Pod) (bool, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	grace := int64(0)
	uid, version := p.UID, p.ResourceVersion
	err := c.cs.CoreV1().Pods(c.namespace).Delete(cctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace,
		Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &version}})
	switch {
	case apierrors.IsConflict(err):
		return false, nil
	case err != nil && !apierrors.IsNotFound(err):
		return false, c.classify("prune", p.Name, err)
	}
	session := p.Labels[launchplan.LabelSession]
	var errs []error
	np, err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).Get(cctx, p.Name, metav1.GetOptions{})
	switch {
	case err == nil && np.Labels[launchplan.LabelManaged] == "true" && np.Labels[launchplan.LabelSession] == session:
		if err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).Delete(cctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, c.classify("delete network policy", p.Name, err))
		}
	case err != nil && !apierrors.IsNotFound(err):
		errs = append(errs, c.classify("get network policy", p.Name, err))
	}
	errs = append(errs, c.deleteOwnSecret(cctx, p.Name, session), c.deleteEgress(cctx, p.Name))
	return true, errors.Join(errs...)
}

// pruneOrphan deletes (unless dryRun) the orphaned NetworkPolicy or Secret
// m on the precondition of its uid and adds it to res; an error is
// appended to errs.
func (c *Client) pruneOrphan(ctx context.Context, dryRun bool, kind string, m metav1.ObjectMeta, res *PruneResult, errs []error) []error {
	if !dryRun {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
		defer cancel()
		uid := m.UID
		del := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
		var err error
		op := "delete network policy"
		if kind == KindSecret {
			op = "delete secret"
			err = c.cs.CoreV1().Secrets(c.namespace).Delete(cctx, m.Name, del)
		} else {
			err = c.cs.NetworkingV1().NetworkPolicies(c.namespace).Delete(cctx, m.Name, del)
		}
		switch {
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			return errs // gone already, or replaced since it was listed
		case err != nil:
			return append(errs, c.classify(op, m.Name, err))
		}
	}
	res.Orphans = append(res.Orphans, Orphan{Kind: kind, Name: m.Name})
	return errs
}
