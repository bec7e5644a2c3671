package podbot

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/pool"
	"github.com/podbot/podbot/sandbox"
)

// claimSandbox hands a ready member of opts.Pool (an agent pool) to the
// caller: pool.Claim takes one atomically (unpause), then it is renamed to
// opts.Name (default podbot-sandbox-<id>) and is an ordinary sandbox from
// then on. An empty pool, after opts.PoolWait, falls back to a cold Create
// from the pool's template. res.Claim says which happened.
func claimSandbox(ctx context.Context, conn *engine.Conn, opts CreateOptions) (CreateResult, error) {
	spec := *opts.Pool
	if err := spec.Check(); err != nil {
		return CreateResult{}, err
	}
	if spec.Kind != pool.KindAgent {
		return CreateResult{}, &errdefs.ConfigError{Key: "pool", Reason: errdefs.ErrConflict,
			Msg: "pool " + spec.Name + " holds " + spec.Kind + " sandboxes; podbot create claims from agent pools (use podbot tools call --pool for tools pools)"}
	}
	if len(opts.Command) > 0 || len(opts.Labels) > 0 || len(opts.AllowHosts) > 0 || opts.Egress != nil || opts.LocalClone != nil {
		return CreateResult{}, &errdefs.ConfigError{Key: "pool", Reason: errdefs.ErrConflict,
			Msg: "a sandbox claimed from pool " + spec.Name + " was made ahead from the pool's template: a command, labels, --allow-host or a local repository copy (--repo, workspace.source = local_clone) cannot be applied to it; drop them or create without --pool"}
	}
	name := opts.Name
	if name == "" {
		sid, err := newSessionID()
		if err != nil {
			return CreateResult{}, err
		}
		name = "podbot-sandbox-" + sid[:12]
	}
	if strings.HasPrefix(name, MemberPrefix) {
		return CreateResult{}, &errdefs.ConfigError{Key: "name", Reason: errdefs.ErrRefused,
			Msg: "container names starting with " + MemberPrefix + " are reserved for unclaimed pool members; choose another --name"}
	}
	b := NewPoolBackend(conn, PoolOptions{Config: opts.Config, SidecarPath: opts.SidecarPath, Environ: opts.Environ})
	t0 := time.Now()
	m, waited, err := pool.Claim(ctx, b, spec.Name, opts.PoolWait)
	if errors.Is(err, pool.ErrEmpty) {
		copts, err := createOptionsFor(spec, opts.Config, opts.SidecarPath, opts.Environ)
		if err != nil {
			return CreateResult{}, err
		}
		// A cold sandbox takes the configuration's egress policy at once
		// (a member is made denying everything until its claim).
		copts.Name, copts.Redactor, copts.Egress = name, opts.Redactor, nil
		waitedFor := time.Since(t0)
		res, err := create(ctx, conn, copts, map[string]string{launchplan.LabelPool: spec.Name})
		if err != nil {
			return res, err
		}
		res.Claim = &ClaimReport{Pool: spec.Name, Outcome: ClaimCold, Name: res.Name, Duration: waitedFor}
		return res, nil
	}
	if err != nil {
		return CreateResult{}, err
	}
	if err := b.rename(ctx, m, name); err != nil {
		return CreateResult{}, err
	}
	if err := claimEgressForCreate(ctx, conn, m, opts); err != nil {
		cctx, cancel := engine.CleanupContext(ctx)
		defer cancel()
		return CreateResult{}, errors.Join(err, b.removeContainer(cctx, m))
	}
	out := ClaimReport{Pool: spec.Name, Outcome: ClaimWarm, Member: m.Name, Name: name, Duration: time.Since(t0)}
	if waited {
		out.Outcome = ClaimWaited
	}
	return CreateResult{ID: m.ID, Name: name, Claim: &out}, nil
}

// claimToolSession opens a tool session on a ready member of opts.Pool (a
// tools pool): taken atomically, renamed to the session's first container
// name, its workspace hydrated, its sidecar connected. An empty pool,
// after opts.PoolWait, gives an ordinary (cold) session made from the
// pool's template. opts.OnClaim learns which happened.
func claimToolSession(ctx context.Context, conn *engine.Conn, opts ToolSessionOptions, copts sandbox.ContainerOptions) (ToolSession, error) {
	spec := *opts.Pool
	if err := spec.Check(); err != nil {
		return nil, err
	}
	if spec.Kind != pool.KindTools {
		return nil, &errdefs.ConfigError{Key: "pool", Reason: errdefs.ErrConflict,
			Msg: "pool " + spec.Name + " holds " + spec.Kind + " sandboxes; tool sessions claim from tools pools (use podbot create --pool for agent pools)"}
	}
	ownName := copts.ID == ""
	if ownName {
		sid, err := newSessionID()
		if err != nil {
			return nil, err
		}
		copts.ID = sid
	}
	report := func(r ClaimReport) {
		if opts.OnClaim != nil {
			opts.OnClaim(r)
		}
	}
	b := NewPoolBackend(conn, PoolOptions{Config: opts.Config, SidecarPath: opts.SidecarPath, WorkspaceRoot: copts.WorkspaceRoot, Logger: opts.Logger})
	t0 := time.Now()
	cold := func(fallback string) (ToolSession, error) {
		s, err := sandbox.NewContainer(ctx, conn, copts)
		if err != nil {
			return nil, err
		}
		report(ClaimReport{Pool: spec.Name, Outcome: ClaimCold, Duration: time.Since(t0), Fallback: fallback})
		return s, nil
	}
	m, waited, err := pool.Claim(ctx, b, spec.Name, opts.PoolWait)
	if errors.Is(err, pool.ErrEmpty) {
		return cold("")
	}
	if err != nil {
		return nil, err
	}
	name := sandbox.ContainerName(copts.ID, 1)
	s, err := b.adopt(ctx, m, name, copts, ownName)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		// The member was taken (no one else has it) and is removed by now;
		// a session still comes, cold.
		if opts.Logger != nil {
			opts.Logger.Warn("a taken pool member could not be used; starting cold", "pool", spec.Name, "member", m.Name, "error", err)
		}
		return cold(truncateText(err.Error(), 200))
	}
	out := ClaimReport{Pool: spec.Name, Outcome: ClaimWarm, Member: m.Name, Name: name, Duration: time.Since(t0)}
	if waited {
		out.Outcome = ClaimWaited
	}
	report(out)
	return s, nil
}

// renameTimeout bounds the rename of a claimed tools member, which may
// outlive the claim (see adopt).
const renameTimeout = 30 * time.Second

// adopt renames a taken tools member to name and opens the session on it
// (sandbox.ClaimPoolMember: over the member's link socket when it has
// one, so no exec), the two at once: ownership was settled by Take, and
// until the rename lands the member only looks like one being made, which
// nothing else touches for minutes. When the session's name is its own
// (ownName: a generated session id, so no other container can hold it),
// the session is handed out before the rename lands and settles it itself
// (Container.SettleRename: a failed rename replaces the member with a
// container of the session's own); otherwise the claim waits for it. On
// failure the member is gone.
func (b *PoolBackend) adopt(ctx context.Context, m pool.Member, name string, copts sandbox.ContainerOptions, ownName bool) (ToolSession, error) {
	renamed := make(chan error, 1)
	go func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), renameTimeout)
		defer cancel()
		err := b.conn.API().ContainerRename(rctx, m.ID, name)
		if err != nil {
			err = engine.Classify("rename pool member", b.conn.Endpoint().String(), name, err)
		}
		renamed <- err
	}()
	s, err := sandbox.ClaimPoolMember(ctx, b.conn, copts, sandbox.Running{ContainerID: m.ID, ContainerName: name, SessionDir: m.Dir})
	if err != nil {
		return nil, err // ClaimPoolMember removed the member
	}
	if ownName {
		s.SettleRename(ctx, renamed)
		return s, nil
	}
	if rerr := <-renamed; rerr != nil {
		cctx, cancel := engine.CleanupContext(ctx)
		defer cancel()
		return nil, errors.Join(rerr, s.Close(cctx))
	}
	return s, nil
}

// truncateText bounds s to n bytes.
func truncateText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// claimEgressForCreate puts the configuration's egress policy (presets and
// network.allow) in force on a claimed allowlist member, which was made
// denying everything. Other members need nothing.
func claimEgressForCreate(ctx context.Context, conn *engine.Conn, m pool.Member, opts CreateOptions) error {
	in, err := conn.Inspect(ctx, m.ID, false)
	if err != nil {
		return err
	}
	if in.Config == nil || in.Config.Labels[egressnet.LabelMode] != string(egress.ModeAllowlist) {
		return nil
	}
	eg, err := EgressFromConfig(opts.Config, opts.Config.Agent.Kind)
	if err != nil {
		return err
	}
	plan := launchplan.Plan{Labels: map[string]string{}, Egress: eg}
	_, err = applyClaimedEgress(ctx, conn, m.ID, &plan)
	return err
}
