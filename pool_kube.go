//go:build kubernetes

package podbot

import (
	"context"
	"errors"
	"time"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/pool"
)

// NewKubePoolBackend returns the kubernetes backend's pool.Backend: a
// member is a sandbox Pod made from the pool's template exactly as
// CreateOnKubernetes makes one (hardened, with a NetworkPolicy of its
// own), and a claim is a resourceVersion-checked patch of its state label
// (see kube.PoolBackend). Only agent pools with network none or open
// live on a cluster.
func NewKubePoolBackend(kc *kube.Client, opts PoolOptions) *kube.PoolBackend {
	return kc.PoolBackend(kube.PoolOptions{Logger: opts.Logger, Plan: func(spec pool.Spec) (launchplan.Plan, error) {
		copts, err := createOptionsFor(spec, opts.Config, "", opts.Environ)
		if err != nil {
			return launchplan.Plan{}, err
		}
		return kubePlan(copts)
	}})
}

// kubePlan is the launch plan CreateOnKubernetes runs for opts, without
// the sidecar mount a Pod cannot have.
func kubePlan(opts CreateOptions) (launchplan.Plan, error) {
	opts.SidecarPath = ""
	req, err := CreateRequest(engine.Endpoint{}, opts)
	if err != nil {
		return launchplan.Plan{}, err
	}
	return launchplan.Normalize(req)
}

// claimOnKubernetes hands a ready member of opts.Pool (an agent pool) to
// the caller: pool.Claim takes one atomically, and the member's Pod is an
// ordinary sandbox from then on, under its own name (a Pod cannot be
// renamed). An empty pool, after opts.PoolWait, falls back to a cold
// create from the pool's template, labelled as claimed from the pool.
// res.Claim says which happened.
func claimOnKubernetes(ctx context.Context, kc *kube.Client, opts CreateOptions) (CreateResult, error) {
	spec := *opts.Pool
	if err := spec.Check(); err != nil {
		return CreateResult{}, err
	}
	if !spec.OnBackend(pool.BackendKubernetes) {
		return CreateResult{}, &errdefs.ConfigError{Key: "pool", Reason: errdefs.ErrConflict,
			Msg: "pool " + spec.Name + " keeps its members on the container engine; claim from it with --backend engine, or create a pool with --backend kubernetes"}
	}
	if spec.Kind != pool.KindAgent {
		return CreateResult{}, &errdefs.ConfigError{Key: "pool", Reason: errdefs.ErrConflict,
			Msg: "pool " + spec.Name + " holds " + spec.Kind + " sandboxes; podbot create claims from agent pools"}
	}
	if len(opts.Command) > 0 || len(opts.Labels) > 0 || len(opts.AllowHosts) > 0 || opts.Egress != nil || opts.LocalClone != nil {
		return CreateResult{}, &errdefs.ConfigError{Key: "pool", Reason: errdefs.ErrConflict,
			Msg: "a sandbox claimed from pool " + spec.Name + " was made ahead from the pool's template: a command, labels, --allow-host or a local repository copy cannot be applied to it; drop them or create without --pool"}
	}
	if opts.Name != "" {
		return CreateResult{}, &errdefs.ConfigError{Key: "name", Reason: errdefs.ErrUnsupported,
			Msg: "--name with --pool on the kubernetes backend: a claimed Pod keeps its member name (Pods cannot be renamed); drop --name, podbot prints the name"}
	}
	b := NewKubePoolBackend(kc, PoolOptions{Config: opts.Config, Environ: opts.Environ})
	t0 := time.Now()
	m, waited, err := pool.Claim(ctx, b, spec.Name, opts.PoolWait)
	if errors.Is(err, pool.ErrEmpty) {
		copts, err := createOptionsFor(spec, opts.Config, "", opts.Environ)
		if err != nil {
			return CreateResult{}, err
		}
		plan, err := kubePlan(copts)
		if err != nil {
			return CreateResult{}, err
		}
		plan.Labels[launchplan.LabelPool] = spec.Name
		plan.Labels[kube.LabelPoolState] = kube.PoolStateClaimed
		waitedFor := time.Since(t0)
		sb, err := kc.Create(ctx, plan)
		if err != nil {
			return CreateResult{}, err
		}
		return CreateResult{ID: sb.UID, Name: sb.Name, Plan: plan,
			Claim: &ClaimReport{Pool: spec.Name, Outcome: ClaimCold, Name: sb.Name, Duration: waitedFor}}, nil
	}
	if err != nil {
		return CreateResult{}, err
	}
	out := ClaimReport{Pool: spec.Name, Outcome: ClaimWarm, Member: m.Name, Name: m.Name, Duration: time.Since(t0)}
	if waited {
		out.Outcome = ClaimWaited
	}
	return CreateResult{ID: m.ID, Name: m.Name, Claim: &out}, nil
}
