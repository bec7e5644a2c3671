package podbot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/pool"
	"github.com/podbot/podbot/sandbox"
	"github.com/podbot/podbot/tokendaemon"
)

// StepPool is the launch step that claims a pool member (LaunchOptions.Pool).
const StepPool = "pool"

// launchFromPool is Launch with opts.Pool: it claims a ready member of the
// agent pool and applies what is per claim exactly as a cold launch does
// (credentials, git identity, the clone of --repo, the agent's environment
// in its exec). The member is claimed only if the security-relevant part of
// the plan it was made from (LabelPoolHardening) equals the plan a cold
// launch would make here; the claim renames it to the launch's name. An
// empty pool, after opts.PoolWait, gives a cold launch with the pool's
// template. What a made-ahead member cannot take is refused before
// anything is claimed (checkPoolLaunch).
func launchFromPool(ctx context.Context, conn *engine.Conn, opts LaunchOptions) (sb *Sandbox, err error) {
	progress := opts.Progress
	if progress == nil {
		progress = func(string, string) {}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	report := func(r ClaimReport) {
		if opts.OnClaim != nil {
			opts.OnClaim(r)
		}
	}
	spec := *opts.Pool
	progress(StepPlan, "resolving the launch plan")
	if err := checkPoolLaunch(spec, opts); err != nil {
		return nil, &StepError{StepPool, err}
	}
	// The plan a cold launch would make here, with the pool's template.
	req, _, err := launchRequest(conn, opts)
	if err != nil {
		return nil, &StepError{StepPlan, err}
	}
	applyAgentTemplate(&req, spec)
	plan, err := launchplan.Normalize(req)
	if err != nil {
		return nil, &StepError{StepPlan, err}
	}
	if strings.HasPrefix(plan.Name, MemberPrefix) {
		return nil, &StepError{StepPlan, &errdefs.ConfigError{Key: "name", Reason: errdefs.ErrRefused,
			Msg: "container names starting with " + MemberPrefix + " are reserved for unclaimed pool members; choose another --name"}}
	}
	if opts.SidecarPath != "" {
		sidecar, err := sandbox.CanonicalSidecar(opts.SidecarPath)
		if err != nil {
			return nil, &StepError{StepPlan, err}
		}
		if err := plan.Apply(sandbox.WithSidecarMount(sidecar)); err != nil {
			return nil, &StepError{StepPlan, err}
		}
	}
	applyEgressMode(&plan)
	// A launch that clones with a GitHub App mounts a token directory;
	// a member made with a GitHub App has one (named after the member).
	needsToken := opts.TokenSource != nil && req.Workspace.Strategy == launchplan.WorkspaceGitHubClone
	if needsToken {
		if opts.RuntimeDir == "" {
			return nil, &StepError{StepToken, &errdefs.ConfigError{Key: "XDG_RUNTIME_DIR", Reason: errdefs.ErrMissingRequired,
				Msg: "GitHub tokens live under $XDG_RUNTIME_DIR/podbot; set XDG_RUNTIME_DIR to a private directory"}}
		}
		if err := plan.Apply(launchplan.WithTokenMount(filepath.Join(opts.RuntimeDir, "podbot", plan.Name, tokendaemon.TokenFileName))); err != nil {
			return nil, &StepError{StepToken, err}
		}
	}

	b := &matchingBackend{PoolBackend: NewPoolBackend(conn, PoolOptions{Config: opts.Config, SidecarPath: opts.SidecarPath, Environ: opts.Environ, Logger: logger}),
		want: hardeningOf(plan)}
	t0 := time.Now()
	// The image the reference names now: a member made from an image the
	// tag has since moved away from is not what a cold launch would run.
	if img, err := conn.API().ImageInspect(ctx, plan.Image); err == nil {
		b.imageID = img.ID
	}
	m, waited, err := pool.Claim(ctx, b, spec.Name, opts.PoolWait)
	if errors.Is(err, pool.ErrEmpty) {
		r := ClaimReport{Pool: spec.Name, Outcome: ClaimCold, Duration: time.Since(t0)}
		what := "pool " + spec.Name + " has no ready member"
		if opts.PoolWait > 0 {
			what += " after waiting " + opts.PoolWait.String()
		}
		progress(StepPool, what+": launching cold from the pool's template")
		report(r)
		cold := opts
		cold.Pool = nil
		return launch(ctx, engineBackend{conn}, conn, cold, &spec)
	}
	if err != nil {
		return nil, &StepError{StepPool, err}
	}
	if err := b.rename(ctx, m, plan.Name); err != nil {
		return nil, &StepError{StepPool, err}
	}
	// From here the member is this launch's: a failure removes it.
	made := &Sandbox{conn: conn, ID: m.ID, Name: plan.Name, Workspace: plan.WorkingDir}
	defer func() {
		if err != nil {
			cctx, cancel := engine.CleanupContext(ctx)
			defer cancel()
			if cerr := made.Close(cctx, true); cerr != nil {
				logger.Warn("cleanup after a failed launch", "error", cerr)
			}
			sb = nil
		}
	}()
	r := ClaimReport{Pool: spec.Name, Outcome: ClaimWarm, Member: m.Name, Name: plan.Name, Duration: time.Since(t0)}
	if waited {
		r.Outcome = ClaimWaited
	}
	progress(StepPool, claimLine(r))
	report(r)

	if plan.Egress.Mode == egress.ModeAllowlist {
		// The member's proxy denies everything; this launch's policy must
		// be in force there before anything (the clone, the agent) runs.
		made.egress = &egressSetup{name: m.Name} // what a failure removes, until the labels say more
		t1 := time.Now()
		es, err := applyClaimedEgress(ctx, conn, m.ID, &plan)
		if es != nil {
			made.egress = es
		}
		if err != nil {
			return nil, &StepError{StepNetwork, err}
		}
		progress(StepNetwork, fmt.Sprintf("egress policy (%d rules) in force on the member's proxy %s (confirmed by the proxy in %.1f ms)",
			len(plan.Egress.Policy.Rules), egressnet.ProxyName(made.egress.name), float64(time.Since(t1).Microseconds())/1000))
	}

	if needsToken {
		progress(StepToken, "acquiring an installation token into the member's token directory")
		if err := made.claimToken(ctx, opts, m, &plan, logger); err != nil {
			return nil, &StepError{StepToken, err}
		}
	}

	// Git identity: a file in the credentials upload, or (read-only root
	// filesystem) variables. A cold launch puts those in the container's
	// configuration; a made-ahead member's is fixed, so they go to the
	// agent's exec.
	var gitConfig []byte
	if opts.GitConfig != nil {
		name, email := creds.GitIdentity(ctx, opts.GitConfig)
		if env := creds.GitConfigEnv(name, email); plan.Security.ReadOnlyRootfs && env != nil {
			if err := plan.Apply(launchplan.WithAgentEnv(env...)); err != nil {
				return nil, &StepError{StepGitIdentity, err}
			}
			progress(StepGitIdentity, "user.name and user.email in the agent's environment (GIT_CONFIG_*: the root filesystem is read-only)")
		} else if !plan.Security.ReadOnlyRootfs {
			gitConfig = creds.GitConfigFile(name, email)
		}
	}
	made.Plan = plan
	arch, err := made.buildCredentials(ctx, opts, gitConfig)
	if err != nil {
		return nil, &StepError{StepCredentials, err}
	}
	if arch != nil && len(arch.Paths) > 0 {
		progress(StepCredentials, fmt.Sprintf("copying %v into %s", arch.Paths, arch.TargetHome))
	}
	if arch != nil && arch.GitConfig != "" {
		progress(StepGitIdentity, "user.name and user.email in "+arch.GitConfig)
	}
	if err := (engineBackend{conn}).installCredentials(ctx, made, arch); err != nil {
		return nil, &StepError{StepCredentials, err}
	}
	if req.Workspace.Strategy == launchplan.WorkspaceGitHubClone && opts.Repo != "" {
		progress(StepWorkspace, fmt.Sprintf("cloning %s at %s", opts.Repo, opts.Branch))
		if err := made.clone(ctx, opts); err != nil {
			return nil, &StepError{StepWorkspace, err}
		}
	}
	return made, nil
}

// claimLine is the progress line of a claim that took a member.
func claimLine(r ClaimReport) string {
	ms := float64(r.Duration.Microseconds()) / 1000
	if r.Outcome == ClaimWaited {
		return fmt.Sprintf("waited for and claimed member %s of pool %s in %.1f ms; it is now %s", r.Member, r.Pool, ms, r.Name)
	}
	return fmt.Sprintf("claimed warm member %s of pool %s in %.1f ms; it is now %s", r.Member, r.Pool, ms, r.Name)
}

// checkPoolLaunch refuses, before anything is claimed, what a member made
// ahead of the claim cannot take: a bind mount (host_mount), a local
// repository copy (its labels), another network mode than the pool's,
// [[secrets]] and the Codex key vault (the vault's proxy flags and CA are
// made with the sandbox) and a GitHub App token (its mount is made with
// the sandbox). An allowlist launch's egress rules (presets, network.allow,
// --allow-host) are written into the member's policy at the claim.
func checkPoolLaunch(spec pool.Spec, opts LaunchOptions) error {
	if err := spec.Check(); err != nil {
		return err
	}
	if spec.Kind != pool.KindAgent {
		return &errdefs.ConfigError{Key: "pool", Reason: errdefs.ErrConflict,
			Msg: "pool " + spec.Name + " holds " + spec.Kind + " sandboxes; podbot run and podbot host claim from agent pools (podbot pool create NAME --kind agent)"}
	}
	refuse := func(key, msg string) error {
		return &errdefs.ConfigError{Key: key, Reason: errdefs.ErrRefused,
			Msg: "pool " + spec.Name + ": " + msg}
	}
	cfg := opts.Config
	if opts.HostPath != "" || (cfg.Workspace.Source == config.SourceHostMount && cfg.Workspace.HostPath != "") {
		return refuse("workspace.host_path", "a host-mount workspace (--workspace, workspace.source = \"host_mount\") is a bind mount, fixed when the container is made, and pool members are made before the claim; clone the repository (--repo OWNER/NAME) instead, or run without --pool")
	}
	if localCloneOf(opts) != nil {
		return refuse("workspace.source", "a local repository copy (--repo PATH, workspace.source = \"local_clone\") is recorded in the sandbox's labels for podbot diff and podbot fetch, which a member made ahead cannot take; run without --pool")
	}
	mode := cfg.Network.Mode
	if mode == "" {
		mode = config.NetworkAllowlist
	}
	if opts.Egress != nil && opts.Egress.Mode != "" {
		mode = string(opts.Egress.Mode)
	}
	if spec.Network != "" && spec.Network != mode {
		return refuse("network.mode", fmt.Sprintf("its members have network %s, and this launch asks for network.mode %q; a claim would change the sandbox's egress, so pass --network %s to take the pool's, use a pool made with --network %s, or run without --pool", spec.Network, mode, spec.Network, mode))
	}
	if len(cfg.Secrets) > 0 {
		return refuse(config.SecretsKey, "[[secrets]] live in a credential vault that the sandbox's egress proxy is started with and whose CA the sandbox trusts from its creation, which a member made ahead cannot take; remove them for pooled sandboxes or run without --pool")
	}
	if codex, err := prepareCodexVault(opts, egress.Mode(mode)); err != nil {
		return err
	} else if codex != nil {
		return refuse(codexVaultKey, "the Codex API key would go into a credential vault, which a member made ahead cannot take (its proxy and CA are made with the sandbox); set "+codexVaultKey+" = false or run without --pool")
	}
	return nil
}

// applyAgentTemplate overrides a launch request with an agent pool's
// template, as podbot create applies it to a member (createOptionsFor and
// CreateRequest), so a claimed member and a cold launch from an empty pool
// get the same plan.
func applyAgentTemplate(req *launchplan.Request, spec pool.Spec) {
	if spec.Image != "" {
		req.Image = spec.Image
	}
	if spec.ReadOnlyRootfs != nil {
		ro := *spec.ReadOnlyRootfs
		req.Sandbox.ReadOnlyRootfs = &ro
	}
	if spec.MemoryBytes > 0 {
		req.Sandbox.MemoryBytes = spec.MemoryBytes
	}
	if spec.NanoCPUs > 0 {
		req.Sandbox.NanoCPUs = spec.NanoCPUs
	}
	if spec.PidsLimit > 0 {
		req.Sandbox.PidsLimit = spec.PidsLimit
	}
	if spec.Network == config.NetworkNone {
		req.Egress.Mode = egress.ModeNone
		req.Sandbox.Network = "none"
	}
}

// matchingBackend is the engine's pool backend for a launch: it takes only
// members whose hardening label equals the launch's plan.
type matchingBackend struct {
	*PoolBackend
	want hardening
	// imageID is the image the launch's reference names now; empty skips
	// the check (the image is not here: a cold launch would pull it).
	imageID string
}

// Take reads m's hardening label and, when it matches, takes m. A member
// that differs is left in the pool and the error (a *MemberMismatchError)
// says in what.
func (b *matchingBackend) Take(ctx context.Context, m pool.Member) error {
	in, err := b.conn.Inspect(ctx, m.ID, false)
	if errors.Is(err, errdefs.ErrNotFound) {
		return fmt.Errorf("%w: %s is gone", pool.ErrTaken, m.Name)
	}
	if err != nil {
		return err
	}
	var labels map[string]string
	if in.Config != nil {
		labels = in.Config.Labels
	}
	got, ok := parseHardening(labels[LabelPoolHardening])
	if !ok {
		return &MemberMismatchError{Pool: m.Pool, Member: m.Name}
	}
	if d := b.want.differences(got); len(d) > 0 {
		return &MemberMismatchError{Pool: m.Pool, Member: m.Name, Fields: d, want: b.want, got: got}
	}
	if b.imageID != "" && in.Image != b.imageID {
		return &MemberMismatchError{Pool: m.Pool, Member: m.Name, Fields: []string{"image_id"}, want: b.want, got: got,
			imageIDs: [2]string{in.Image, b.imageID}}
	}
	return b.PoolBackend.Take(ctx, m)
}

// MemberMismatchError says that a pool member was made with other
// hardening than the claiming launch would use (another configuration made
// it, or an older podbot that did not record it); the member stays in the
// pool. It matches errdefs.ErrConflict.
type MemberMismatchError struct {
	// Pool names the pool and Member the member left in it.
	Pool, Member string
	// Fields are the differing parts (JSON keys of the hardening record);
	// empty when the member records none.
	Fields []string
	// want is what this launch would make cold, got what the member
	// records.
	want, got hardening
	// imageIDs are the member's image and the one the launch's image
	// reference names now, when those differ (field image_id).
	imageIDs [2]string
}

func (e *MemberMismatchError) Error() string {
	if len(e.Fields) == 0 {
		return fmt.Sprintf("pool %s: member %s does not record the hardening it was made with (label %s; an older podbot made it), so podbot cannot tell it equals a cold launch; remove and refill the pool (podbot pool rm %s, podbot pool create) or run without --pool",
			e.Pool, e.Member, LabelPoolHardening, e.Pool)
	}
	var parts []string
	wv, gv := reflect.ValueOf(e.want), reflect.ValueOf(e.got)
	for _, f := range e.Fields {
		if f == "image_id" {
			parts = append(parts, fmt.Sprintf("image_id: member %s, this launch %s (the image reference %s has moved since the member was made; podbot pool serve replaces members at pool.max_age, or podbot pool rm and create refill it now)",
				shortID(e.imageIDs[0]), shortID(e.imageIDs[1]), e.want.Image))
			continue
		}
		for i := range wv.NumField() {
			if key, _, _ := strings.Cut(wv.Type().Field(i).Tag.Get("json"), ","); key == f {
				parts = append(parts, fmt.Sprintf("%s: member %s, this launch %s", f, short(gv.Field(i).Interface()), short(wv.Field(i).Interface())))
			}
		}
	}
	return fmt.Sprintf("pool %s: member %s was made with other settings than this launch would use (%s); a claim must give exactly the sandbox a cold launch gives, so make this launch's configuration (image, [sandbox], network.mode, network.upstream_ca, [github] app) agree with the one podbot pool serve and podbot pool create use, or run without --pool",
		e.Pool, e.Member, strings.Join(parts, "; "))
}

// Is matches errdefs.ErrConflict.
func (e *MemberMismatchError) Is(target error) bool { return target == errdefs.ErrConflict }

// shortID is an image id without its algorithm, 12 hex digits long.
func shortID(id string) string {
	_, hex, ok := strings.Cut(id, ":")
	if !ok {
		hex = id
	}
	if len(hex) > 12 {
		hex = hex[:12]
	}
	return hex
}

// short renders v as JSON, bounded.
func short(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return truncateText(string(b), 160)
}

// policyLoadTimeout bounds how long a claim waits for a member's proxy to
// confirm the claimer's policy (it polls its file every 500 ms).
const policyLoadTimeout = 15 * time.Second

// applyClaimedEgress writes plan's egress policy into the policy file of
// claimed allowlist member id and waits until its proxy confirms that
// policy is in force (egressnet.ApplyPolicy). It points plan at the
// member's network and proxy, as prepareEgress does for a cold launch,
// and returns the member's egress plumbing (named after the member).
func applyClaimedEgress(ctx context.Context, conn *engine.Conn, id string, plan *launchplan.Plan) (*egressSetup, error) {
	in, err := conn.Inspect(ctx, id, false)
	if err != nil {
		return nil, err
	}
	var labels map[string]string
	if in.Config != nil {
		labels = in.Config.Labels
	}
	if labels[egressnet.LabelMode] != string(egress.ModeAllowlist) {
		return nil, &errdefs.ContainerError{Op: "claim pool member", Container: egressName(in), Reason: errdefs.ErrConflict,
			Msg: "the member has no allowlist egress proxy, and this launch asks for network.mode allowlist"}
	}
	es, err := claimedEgress(labels)
	if err != nil {
		return nil, err
	}
	poke := func(ctx context.Context) error {
		// SIGHUP makes the proxy look at its policy file at once rather
		// than at its next poll; without it the poll still comes.
		return conn.API().ContainerKill(ctx, egressnet.ProxyName(es.name), "HUP")
	}
	if err := egressnet.ApplyPolicy(ctx, es.dirs, &plan.Egress.Policy, policyLoadTimeout, poke); err != nil {
		return es, err
	}
	plan.Network = egressnet.NetworkName(es.name)
	for _, k := range []string{LabelEgressDir, egressnet.LabelName, egressnet.LabelProxyAddr} {
		plan.Labels[k] = labels[k]
	}
	return es, nil
}

// claimToken mints the claimer's GitHub installation token, limited to
// opts.Repo, into claimed member m's token directory (named after the
// member, LabelTokenDir), with the clone origin next to it, records that
// scope beside the directory for podbot start and podbot token-daemon
// (tokenTarget), gives the agent git's askpass program, and keeps the
// token fresh until Close.
func (sb *Sandbox) claimToken(ctx context.Context, opts LaunchOptions, m pool.Member, plan *launchplan.Plan, logger *slog.Logger) error {
	in, err := sb.conn.Inspect(ctx, m.ID, false)
	if err != nil {
		return err
	}
	var labels map[string]string
	if in.Config != nil {
		labels = in.Config.Labels
	}
	dirName := labels[LabelTokenDir]
	if dirName == "" || dirName != m.Name {
		return &errdefs.ContainerError{Op: "claim pool member", Container: m.Name, Reason: errdefs.ErrInvalidValue,
			Msg: "the member does not record its token directory (label " + LabelTokenDir + "); remove and refill the pool"}
	}
	origin, err := tokenOrigin(opts)
	if err != nil {
		return err
	}
	scope, err := tokenScopePath(opts.RuntimeDir, dirName)
	if err != nil {
		return err
	}
	if err := writeTokenScope(opts.RuntimeDir, dirName, tokenScope{Repo: opts.Repo, Origin: origin.String(), Engine: sb.conn.Endpoint().String()}); err != nil {
		return err
	}
	sb.tokenScope = scope
	if err := sb.prepareToken(ctx, opts, plan.Name, dirName, origin, nil, "", logger); err != nil {
		return err
	}
	if err := plan.Apply(
		launchplan.WithGitHubScope(opts.Repo, origin.String()),
		launchplan.WithAgentEnv("GIT_ASKPASS="+SidecarTarget),
	); err != nil {
		return err
	}
	sb.runToken(logger)
	return nil
}
