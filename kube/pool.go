package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/pool"
)

// Pool members on a cluster.
//
// A member is an ordinary sandbox Pod (and its NetworkPolicy) made from the
// pool's template, named podbot-pool-<pool>-<12 hex digits> and labelled
// podbot.pool=<pool> and podbot.pool.state=ready. It is ready to claim once
// it runs. A claim is one merge patch of its labels to
// podbot.pool.state=claimed that carries the resourceVersion the claimer
// listed: the API server applies it only if the Pod did not change since,
// so of any number of claimers (in any number of processes, on any number
// of hosts) exactly one succeeds and the others get a conflict and try the
// next member. A claimed Pod keeps its name (Pods cannot be renamed) and is
// an ordinary sandbox from then on.
const (
	// LabelPoolState is a member's state: PoolStateReady until a claim
	// sets PoolStateClaimed, or a removal PoolStateRemoving.
	LabelPoolState = "podbot.pool.state"
	// PoolStateReady marks an unclaimed member.
	PoolStateReady = "ready"
	// PoolStateClaimed marks a member handed out (or a sandbox created
	// cold for a claim): the pool's no longer.
	PoolStateClaimed = "claimed"
	// PoolStateRemoving marks a member a refiller took in order to delete it.
	PoolStateRemoving = "removing"
	// MemberPrefix starts the Pod name of every pool member, as
	// podbot.MemberPrefix starts an engine member's container name.
	MemberPrefix = "podbot-pool-"
)

// memberIDPattern is the id part of a member's Pod name.
var memberIDPattern = regexp.MustCompile(`^[0-9a-f]{12}$`)

// takeAttempts bounds how often Take re-reads a member whose
// resourceVersion moved for another reason than a claim (a status update
// by the kubelet) before it gives up.
const takeAttempts = 3

// PoolOptions are the inputs of Client.PoolBackend.
type PoolOptions struct {
	// Plan returns the launch plan of one new member of spec, with a
	// session id of its own each call. The backend names the Pod and adds
	// the pool's labels.
	Plan func(spec pool.Spec) (launchplan.Plan, error)
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// PoolBackend is the kubernetes backend's pool.Backend (see LabelPoolState).
type PoolBackend struct {
	c    *Client
	opts PoolOptions
}

var _ pool.Backend = (*PoolBackend)(nil)

// PoolBackend returns the pool backend of c's namespace.
func (c *Client) PoolBackend(opts PoolOptions) *PoolBackend {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &PoolBackend{c: c, opts: opts}
}

// MemberName is the Pod name of member id of pool.
func MemberName(poolName, id string) string { return MemberPrefix + poolName + "-" + id }

// isMemberName reports whether name is a member Pod name of poolName.
func isMemberName(poolName, name string) bool {
	id, ok := strings.CutPrefix(name, MemberPrefix+poolName+"-")
	return ok && memberIDPattern.MatchString(id)
}

// Members lists the pool's Pods in one API call. A Pod being deleted is
// left out; a Pod with the pool's label but not a member's name is shown
// as claimed (podbot never touches it as a member).
func (b *PoolBackend) Members(ctx context.Context, poolName string) ([]pool.Member, error) {
	if err := pool.ValidName(poolName); err != nil {
		return nil, err
	}
	sel := labels.Set{launchplan.LabelManaged: "true", launchplan.LabelPool: poolName}.String()
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	pods, err := b.c.cs.CoreV1().Pods(b.c.namespace).List(cctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, b.c.classify("list pool members", "", err)
	}
	out := make([]pool.Member, 0, len(pods.Items))
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		out = append(out, pool.Member{Pool: poolName, ID: string(p.UID), Name: p.Name, State: memberState(poolName, p),
			Created: p.CreationTimestamp.Time, Version: p.ResourceVersion})
	}
	return out, nil
}

// memberState maps a member Pod to its pool state.
func memberState(poolName string, p *corev1.Pod) string {
	if !isMemberName(poolName, p.Name) {
		return pool.StateClaimed
	}
	switch p.Labels[LabelPoolState] {
	case PoolStateClaimed:
		return pool.StateClaimed
	case PoolStateReady:
	default:
		// Taken for removal by a refiller that did not finish, or a
		// label no podbot writes.
		return pool.StateFailed
	}
	switch p.Status.Phase {
	case corev1.PodRunning:
		return pool.StateReady
	case corev1.PodPending, "":
		if startFailure(p) != nil {
			return pool.StateFailed
		}
		return pool.StateStarting
	}
	return pool.StateFailed
}

// Create makes one member of spec: its NetworkPolicy and Pod, created as
// Client.Create creates a sandbox (waiting until the Pod runs, deleting
// both on any failure), labelled ready. Only agent pools live on a
// cluster.
func (b *PoolBackend) Create(ctx context.Context, spec pool.Spec) (pool.Member, error) {
	if err := spec.Check(); err != nil {
		return pool.Member{}, err
	}
	if spec.Kind != pool.KindAgent {
		return pool.Member{}, unsupported("pool kind", fmt.Sprintf("pool %s: %s pools (tool sessions) are not supported yet; use --kind agent", spec.Name, spec.Kind))
	}
	if b.opts.Plan == nil {
		return pool.Member{}, &errdefs.ConfigError{Key: "pool", Reason: errdefs.ErrMissingRequired, Msg: "the kubernetes pool backend was made without a plan function"}
	}
	plan, err := b.opts.Plan(spec)
	if err != nil {
		return pool.Member{}, err
	}
	session := plan.Labels[launchplan.LabelSession]
	if len(session) < 12 || !memberIDPattern.MatchString(session[:12]) {
		return pool.Member{}, &errdefs.ConfigError{Key: "session", Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("pool %s: a member's session id must start with 12 hex digits, got %q", spec.Name, bounded(session))}
	}
	plan.Name = MemberName(spec.Name, session[:12])
	plan.Labels[launchplan.LabelPool] = spec.Name
	plan.Labels[LabelPoolState] = PoolStateReady
	sb, err := b.c.Create(ctx, plan)
	if err != nil {
		return pool.Member{}, err
	}
	return pool.Member{Pool: spec.Name, ID: sb.UID, Name: sb.Name, State: pool.StateReady, Created: sb.Created}, nil
}

// Take claims member m: a merge patch setting its state label to claimed,
// made conditional on m.Version (the resourceVersion Members listed). A
// conflict means the Pod changed since: when it is still an unclaimed
// running member (the kubelet updated its status) Take reads it again and
// retries, otherwise another caller won and the error matches
// pool.ErrTaken.
func (b *PoolBackend) Take(ctx context.Context, m pool.Member) error {
	return b.setState(ctx, m, PoolStateClaimed)
}

// setState moves ready member m to state (claimed or removing), atomically.
func (b *PoolBackend) setState(ctx context.Context, m pool.Member, state string) error {
	version := m.Version
	for attempt := 0; ; attempt++ {
		if version == "" {
			p, err := b.getMember(ctx, m)
			if err != nil {
				return err
			}
			version = p.ResourceVersion
		}
		err := b.patchState(ctx, m.Name, version, state)
		switch {
		case err == nil:
			return nil
		case apierrors.IsConflict(err) && attempt+1 < takeAttempts:
			b.opts.Logger.Debug("pool member changed since it was listed", "pool", m.Pool, "member", m.Name, "version", version)
			version = ""
			continue
		case apierrors.IsConflict(err):
			return fmt.Errorf("%w: %s changed %d times while being taken", pool.ErrTaken, m.Name, takeAttempts)
		case apierrors.IsNotFound(err):
			return fmt.Errorf("%w: %s is gone", pool.ErrTaken, m.Name)
		}
		return b.c.classify("take pool member", m.Name, err)
	}
}

// getMember reads member m's Pod and checks that it is still a ready
// member of m's pool with m's uid; otherwise the error matches
// pool.ErrTaken.
func (b *PoolBackend) getMember(ctx context.Context, m pool.Member) (*corev1.Pod, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	p, err := b.c.cs.CoreV1().Pods(b.c.namespace).Get(cctx, m.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: %s is gone", pool.ErrTaken, m.Name)
	}
	if err != nil {
		return nil, b.c.classify("take pool member", m.Name, err)
	}
	if (m.ID != "" && string(p.UID) != m.ID) || p.DeletionTimestamp != nil || p.Labels[launchplan.LabelPool] != m.Pool ||
		memberState(m.Pool, p) != pool.StateReady {
		return nil, fmt.Errorf("%w: %s is no longer a ready member of pool %s", pool.ErrTaken, m.Name, m.Pool)
	}
	return p, nil
}

// statePatch is the merge patch of a member's state: the label (the
// selector ps and Members use) and the annotation that mirrors every
// podbot label, conditional on resourceVersion.
type statePatch struct {
	Metadata struct {
		ResourceVersion string            `json:"resourceVersion"`
		Labels          map[string]string `json:"labels"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
}

// patchState sends the conditional state patch; the error is the API
// server's, unclassified.
func (b *PoolBackend) patchState(ctx context.Context, name, version, state string) error {
	var p statePatch
	p.Metadata.ResourceVersion = version
	p.Metadata.Labels = map[string]string{LabelPoolState: state}
	p.Metadata.Annotations = map[string]string{LabelPoolState: state}
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err = b.c.cs.CoreV1().Pods(b.c.namespace).Patch(cctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	return err
}

// Remove deletes member m's Pod and NetworkPolicy. A ready member is taken
// first (state removing), so no claimer gets it meanwhile; any other
// unclaimed member is deleted on the precondition that it did not change
// since it was listed, and read again when it did, so one that just became
// ready and was claimed is left alone. A claimed member is never removed:
// the error matches pool.ErrTaken.
func (b *PoolBackend) Remove(ctx context.Context, m pool.Member) error {
	if !isMemberName(m.Pool, m.Name) {
		return fmt.Errorf("%w: %s is not a member's name", pool.ErrTaken, m.Name)
	}
	for attempt := 0; ; attempt++ {
		switch m.State {
		case pool.StateClaimed:
			return fmt.Errorf("%w: %s is claimed", pool.ErrTaken, m.Name)
		case pool.StateReady:
			if err := b.setState(ctx, m, PoolStateRemoving); err != nil {
				return err
			}
			// Ours now: only the uid is a precondition.
			m.Version = ""
		}
		err := b.deleteMember(ctx, m)
		if !apierrors.IsConflict(err) {
			return err
		}
		if attempt+1 >= takeAttempts {
			return fmt.Errorf("%w: %s changed %d times while being removed", pool.ErrTaken, m.Name, takeAttempts)
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		p, gerr := b.c.cs.CoreV1().Pods(b.c.namespace).Get(cctx, m.Name, metav1.GetOptions{})
		cancel()
		switch {
		case apierrors.IsNotFound(gerr):
			return nil
		case gerr != nil:
			return b.c.classify("remove pool member", m.Name, gerr)
		case string(p.UID) != m.ID && m.ID != "":
			return fmt.Errorf("%w: %s was replaced", pool.ErrTaken, m.Name)
		case p.DeletionTimestamp != nil:
			return nil
		}
		m.State, m.Version = memberState(m.Pool, p), p.ResourceVersion
	}
}

// deleteMember deletes m's Pod on the precondition of its uid and (when
// set) m.Version, then its NetworkPolicy. A conflict is returned as the
// API server's error, unclassified; a Pod already gone is not an error.
func (b *PoolBackend) deleteMember(ctx context.Context, m pool.Member) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	grace := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{}}
	if m.Version != "" {
		del.Preconditions.ResourceVersion = &m.Version
	}
	if m.ID != "" {
		uid := types.UID(m.ID)
		del.Preconditions.UID = &uid
	}
	err := b.c.cs.CoreV1().Pods(b.c.namespace).Delete(cctx, m.Name, del)
	switch {
	case apierrors.IsConflict(err):
		return err
	case err != nil && !apierrors.IsNotFound(err):
		return b.c.classify("remove pool member", m.Name, err)
	}
	return b.c.deleteObjects(cctx, m.Name, false, true)
}

var _ pool.Claimer = (*PoolBackend)(nil)

// claimCandidates bounds the ready members one claim pass reads: a claim
// needs one, and concurrent claimers spread over this many.
const claimCandidates = 16

// claimPoll is how often a waiting claim lists the pool again.
const claimPoll = 50 * time.Millisecond

// ClaimMember implements pool.Claimer (pool.Claim calls it): as the
// generic claim, ready members are tried in random order until one
// conditional patch (as Take's) succeeds, but each pass lists only the
// pool's unclaimed running Pods
// (label podbot.pool.state=ready, field status.phase=Running), so a claim
// reads a short list however many sandboxes were claimed from the pool
// before. With wait > 0 an empty pool is listed again until a member is
// ready or wait has passed; then the error matches pool.ErrEmpty.
func (b *PoolBackend) ClaimMember(ctx context.Context, poolName string, wait time.Duration) (pool.Member, bool, error) {
	if err := pool.ValidName(poolName); err != nil {
		return pool.Member{}, false, err
	}
	sel := labels.Set{launchplan.LabelManaged: "true", launchplan.LabelPool: poolName, LabelPoolState: PoolStateReady}.String()
	start := time.Now()
	for pass := 0; ; pass++ {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		// ResourceVersion "0" lets the API server answer from its watch
		// cache, which may lag by milliseconds: a member claimed meanwhile
		// only costs a conflict, since the patch carries the version.
		pods, err := b.c.cs.CoreV1().Pods(b.c.namespace).List(cctx, metav1.ListOptions{LabelSelector: sel, FieldSelector: "status.phase=Running", Limit: claimCandidates, ResourceVersion: "0"})
		cancel()
		if err != nil {
			return pool.Member{}, false, b.c.classify("list pool members", "", err)
		}
		ready := make([]pool.Member, 0, len(pods.Items))
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp == nil && memberState(poolName, p) == pool.StateReady {
				ready = append(ready, pool.Member{Pool: poolName, ID: string(p.UID), Name: p.Name, State: pool.StateReady,
					Created: p.CreationTimestamp.Time, Version: p.ResourceVersion})
			}
		}
		rand.Shuffle(len(ready), func(i, j int) { ready[i], ready[j] = ready[j], ready[i] })
		var lastErr error
		for _, m := range ready {
			// One conditional patch per candidate: a conflict here almost
			// always means another claimer won it, so the claim moves on
			// instead of reading the Pod again (a version moved only by a
			// status update is fresh in the next pass's list).
			err := b.patchState(ctx, m.Name, m.Version, PoolStateClaimed)
			if err == nil {
				return m, pass > 0, nil
			}
			if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				lastErr = b.c.classify("take pool member", m.Name, err)
			}
			if ctx.Err() != nil {
				return pool.Member{}, false, b.c.classify("claim", "", ctx.Err())
			}
		}
		waited := time.Since(start)
		if waited >= wait {
			if lastErr != nil {
				return pool.Member{}, false, lastErr
			}
			return pool.Member{}, false, &pool.EmptyError{Pool: poolName, Waited: min(waited, wait)}
		}
		t := time.NewTimer(min(claimPoll, wait-waited))
		select {
		case <-ctx.Done():
			t.Stop()
			return pool.Member{}, false, b.c.classify("claim", "", ctx.Err())
		case <-t.C:
		}
	}
}
