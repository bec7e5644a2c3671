package podbot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/pool"
	"github.com/podbot/podbot/sandbox"
	"github.com/podbot/podbot/tokendaemon"
)

// SidecarTarget is where the podbot-sidecar binary appears inside a sandbox:
// the same place for agent sandboxes and tool sessions.
const SidecarTarget = sandbox.SidecarTarget

// createTimeout bounds the engine's create and start calls, which run on a
// context detached from the caller's cancellation (see Create).
const createTimeout = 2 * time.Minute

// CreateOptions are the inputs of Create. Zero values take the configuration.
type CreateOptions struct {
	// Config is the loaded configuration; its image and [sandbox] settings
	// are the defaults the fields below override.
	Config config.Config
	// Name is the container name; empty selects podbot-sandbox-<short id>.
	Name string
	// Image overrides Config.Image.
	Image string
	// Network overrides sandbox.network (none, bridge, or a network name);
	// bridge or a name needs network.mode = "open".
	Network string
	// AllowHosts are egress rules added to network.allow for this sandbox
	// (--allow-host); they need network.mode = "allowlist".
	AllowHosts []string
	// ReadOnlyRootfs, when set, overrides sandbox.read_only_rootfs.
	ReadOnlyRootfs *bool
	// MemoryBytes overrides sandbox.memory when positive.
	MemoryBytes int64
	// NanoCPUs overrides sandbox.cpus when positive (1e9 is one CPU).
	NanoCPUs int64
	// PidsLimit overrides sandbox.pids_limit when positive.
	PidsLimit int64
	// Privileged, when set, overrides sandbox.privileged.
	Privileged *bool
	// Command replaces the container's main process. Empty runs
	// `podbot-sidecar init` (see SidecarPath), which keeps the container
	// alive and reaps zombies.
	Command []string
	// SidecarPath is the host path of the podbot-sidecar binary. It is
	// bind-mounted read-only at SidecarTarget, so the engine must run on
	// this host. Empty (or a Command given) mounts nothing; without a
	// Command the container then runs launchplan.DefaultInitCommand.
	SidecarPath string
	// Labels are extra container labels (keys under podbot. are reserved).
	Labels map[string]string
	// SessionID labels and names the container; empty generates one.
	SessionID string
	// Egress, when set, is the sandbox's egress mode and policy. Allowlist
	// mode needs SidecarPath (the proxy runs it) and keeps the proxy running
	// with the sandbox after Create returns.
	Egress *launchplan.Egress
	// RuntimeDir is $XDG_RUNTIME_DIR, where an allowlist sandbox's egress
	// policy and log live; empty uses the cache directory.
	RuntimeDir string
	// Environ is the host environment the env: sources of [[secrets]] read
	// (the CLI passes its own); nothing else of it reaches the sandbox.
	Environ []string
	// LocalClone, when set, copies a host repository into the sandbox on
	// branch podbot/<name> (see LocalCloneOptions).
	LocalClone *LocalCloneOptions
	// GitHubRepo (owner/name), on the kubernetes backend only, gives the
	// sandbox a GitHub installation token limited to that repository,
	// minted by TokenSource, with podbot-sidecar (SidecarPath) as git's
	// askpass program; podbot token-daemon keeps it fresh (see
	// CreateOnKubernetes). Nothing is cloned. Create refuses it.
	GitHubRepo string
	// TokenSource mints GitHubRepo's tokens (a *github.App).
	TokenSource tokendaemon.TokenSource
	// Redactor, when set, learns the real values of the [[secrets]].
	Redactor *creds.Redactor
	// Pool, when set, claims a ready member of this agent pool instead of
	// creating a sandbox, and renames it to Name (see ClaimSandbox). The
	// pool's template replaces the settings above except Name, Config,
	// SidecarPath, Environ and Redactor.
	Pool *pool.Spec
	// PoolWait is how long a claim waits for a ready member before a cold
	// create.
	PoolWait time.Duration
	// poolTokenDir gives a pool member an empty GitHub token directory,
	// named after it, mounted where a launch with a GitHub App mounts one
	// (LabelTokenDir): a claim mints the token into it.
	poolTokenDir bool
}

// CreateResult describes a created, running sandbox.
type CreateResult struct {
	// ID is the container id.
	ID string `json:"id"`
	// Name is the container name.
	Name string `json:"name"`
	// Plan is the launch plan the container was created from (empty for a
	// claimed pool member).
	Plan launchplan.Plan `json:"-"`
	// Claim says how a claim from CreateOptions.Pool went.
	Claim *ClaimReport `json:"claim,omitempty"`
}

// SandboxFromConfig maps the configuration's [sandbox] section to launch
// plan overrides. In the configuration a zero limit means no limit; in the
// plan it means the default, so zero becomes -1 (unlimited).
func SandboxFromConfig(s config.Sandbox) launchplan.Sandbox {
	unlimitedIfZero := func(v int64) int64 {
		if v == 0 {
			return -1
		}
		return v
	}
	ro := s.ReadOnlyRootfs
	return launchplan.Sandbox{
		Privileged:       s.Privileged,
		MountDevFuse:     s.MountDevFuse,
		SELinuxLabelMode: launchplan.SELinuxLabelMode(s.SELinuxLabelMode),
		PidsLimit:        unlimitedIfZero(s.PidsLimit),
		MemoryBytes:      unlimitedIfZero(s.Memory.Bytes()),
		NanoCPUs:         unlimitedIfZero(int64(s.CPUs * 1e9)),
		Network:          s.Network,
		ReadOnlyRootfs:   &ro,
		GPUs:             append([]string(nil), s.GPUs...),
		User:             s.User,
	}
}

// withEgressNetwork gives a sandbox whose egress mode is none no network at
// all. The other modes leave the request's network as it is: open keeps
// the engine's default (or sandbox.network), and allowlist is enforced by
// the launch from Plan.Egress.
func withEgressNetwork(req *launchplan.Request) {
	if req.Egress.Mode == egress.ModeNone {
		req.Sandbox.Network = "none"
	}
}

// EngineSocketPaths returns the host paths the socket guard must protect
// for conn: the unix socket's path and, when different, what it resolves
// to. A remote endpoint has no host path, so the result is empty.
func EngineSocketPaths(ep engine.Endpoint) []string {
	if ep.Scheme != engine.SchemeUnix || !filepath.IsAbs(ep.Address) {
		return nil
	}
	p := filepath.Clean(ep.Address)
	paths := []string{p}
	if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
		paths = append(paths, r)
	}
	return paths
}

// CreateRequest builds the launch request Create uses: an interactive
// intent with no agent, the configuration's sandbox settings and opts'
// overrides. It does no engine I/O.
func CreateRequest(ep engine.Endpoint, opts CreateOptions) (launchplan.Request, error) {
	cfg := opts.Config
	if opts.Network != "" {
		cfg.Sandbox.Network = opts.Network
	}
	eg, err := EgressFromConfig(cfg, cfg.Agent.Kind, opts.AllowHosts...)
	if err != nil {
		return launchplan.Request{}, err
	}
	for i, s := range cfg.Secrets {
		if s.Source == config.SecretSourceGitHubApp {
			// create mints no installation token (it clones nothing): refuse
			// rather than create a sandbox without the credential.
			return launchplan.Request{}, &errdefs.ConfigError{Key: fmt.Sprintf("%s[%d].source", config.SecretsKey, i), Reason: errdefs.ErrUnsupported,
				Msg: fmt.Sprintf("secret %q: podbot create mints no GitHub installation token (source = \"github-app\" needs podbot run or podbot host with a github_clone workspace); remove the entry or use an env: or file: source", s.Name)}
		}
	}
	sb := SandboxFromConfig(cfg.Sandbox)
	if opts.ReadOnlyRootfs != nil {
		ro := *opts.ReadOnlyRootfs
		sb.ReadOnlyRootfs = &ro
	}
	if opts.MemoryBytes > 0 {
		sb.MemoryBytes = opts.MemoryBytes
	}
	if opts.NanoCPUs > 0 {
		sb.NanoCPUs = opts.NanoCPUs
	}
	if opts.PidsLimit > 0 {
		sb.PidsLimit = opts.PidsLimit
	}
	if opts.Privileged != nil {
		sb.Privileged = *opts.Privileged
	}
	image := opts.Config.Image
	if opts.Image != "" {
		image = opts.Image
	}
	session := opts.SessionID
	if session == "" {
		var err error
		if session, err = newSessionID(); err != nil {
			return launchplan.Request{}, err
		}
	}
	req := launchplan.Request{
		Intent:            launchplan.IntentInteractive,
		Image:             image,
		Name:              opts.Name,
		SessionID:         session,
		InitCommand:       append([]string(nil), opts.Command...),
		EngineSocketPaths: EngineSocketPaths(ep),
		Sandbox:           sb,
		Labels:            opts.Labels,
		Version:           Version,
		Egress:            eg,
	}
	withEgressNetwork(&req)
	if opts.LocalClone != nil {
		req.Workspace = localCloneWorkspace(*opts.LocalClone, cfg.Workspace.BaseDir)
	}
	if len(req.InitCommand) == 0 && opts.SidecarPath != "" {
		req.InitCommand = []string{SidecarTarget, "init"}
	}
	if opts.Egress != nil {
		req.Egress = *opts.Egress
	}
	return req, nil
}

// Create creates and starts a hardened sandbox with no agent from the
// default plan and returns its id and name.
//
// A missing image is pulled with the caller's context, so Ctrl-C stops a
// pull. The engine's create and start calls then run on a context detached
// from the caller's cancellation (bounded in time); if the caller's context
// was cancelled meanwhile, or start fails, the container is force-removed on
// a cleanup context and an error returned, so an interrupted Create never
// leaves a container behind.
//
// With opts.Pool set, Create claims a ready member of that pool instead
// (see claimSandbox).
func Create(ctx context.Context, conn *engine.Conn, opts CreateOptions) (res CreateResult, err error) {
	if opts.GitHubRepo != "" {
		return CreateResult{}, &errdefs.ConfigError{Key: "repo", Reason: errdefs.ErrUnsupported,
			Msg: "podbot create gives a sandbox a GitHub token (--repo OWNER/NAME) on the kubernetes backend only; on the engine use podbot run --repo OWNER/NAME, or podbot create --repo PATH to copy a local repository"}
	}
	if opts.Pool != nil {
		return claimSandbox(ctx, conn, opts)
	}
	return create(ctx, conn, opts, nil)
}

// create is Create with podbot's own labels (a pool's) added to the plan.
func create(ctx context.Context, conn *engine.Conn, opts CreateOptions, reserved map[string]string) (res CreateResult, err error) {
	req, err := CreateRequest(conn.Endpoint(), opts)
	if err != nil {
		return CreateResult{}, err
	}
	plan, err := launchplan.Normalize(req)
	if err != nil {
		return CreateResult{}, err
	}
	for k, v := range reserved {
		plan.Labels[k] = v
	}
	var lcs *localCloneSetup
	if opts.LocalClone != nil {
		if lcs, err = prepareLocalClone(ctx, opts.Environ, *opts.LocalClone, plan.Name, plan.WorkingDir); err != nil {
			return CreateResult{}, err
		}
		defer lcs.cleanup()
		for k, v := range lcs.info.Labels() {
			plan.Labels[k] = v
		}
	}
	sidecar := ""
	if opts.SidecarPath != "" {
		if sidecar, err = sandbox.CanonicalSidecar(opts.SidecarPath); err != nil {
			return CreateResult{}, err
		}
	}
	if len(opts.Command) == 0 && sidecar != "" {
		if err := plan.Apply(sandbox.WithSidecarMount(sidecar)); err != nil {
			return CreateResult{}, err
		}
	}
	applyEgressMode(&plan)
	if opts.poolTokenDir && reserved[launchplan.LabelPool] != "" {
		var dir string
		if dir, err = tokendaemon.EnsureDir(opts.RuntimeDir, plan.Name); err != nil {
			return CreateResult{}, err
		}
		defer func() { // err is create's result
			if err != nil {
				_ = os.RemoveAll(dir)
			}
		}()
		if err := plan.Apply(launchplan.WithTokenMount(filepath.Join(dir, tokendaemon.TokenFileName))); err != nil {
			return CreateResult{}, err
		}
		plan.Labels[LabelTokenDir] = plan.Name
	}
	if reserved[launchplan.LabelPool] != "" {
		// A pool member: a launch that claims it checks it against the
		// plan it would make cold (before prepareEgress puts it on its
		// own internal network, which is per sandbox).
		plan.Labels[LabelPoolHardening] = hardeningOf(plan).label()
	}
	vlt, err := createVault(&plan, opts)
	if err != nil {
		return CreateResult{}, &StepError{StepNetwork, err}
	}
	if plan.Egress.Mode == egress.ModeAllowlist {
		if err := conn.EnsureImage(ctx, plan.Image, nil); err != nil {
			return CreateResult{}, err
		}
		var es *egressSetup
		es, err = prepareEgress(ctx, conn, &plan, sidecar, opts.RuntimeDir, vlt)
		if err != nil {
			return CreateResult{}, &StepError{StepNetwork, err}
		}
		defer func() {
			if err != nil {
				cctx, cancel := engine.CleanupContext(ctx)
				defer cancel()
				if res.ID != "" {
					_ = conn.Remove(cctx, res.ID, true)
				}
				err = errors.Join(err, es.teardown(cctx, conn))
				res = CreateResult{}
			}
		}()
		defer func() {
			if err == nil {
				if lerr := lockNetwork(ctx, conn, res.ID, plan.Image, sidecar, es.gateways); lerr != nil {
					err = &StepError{StepNetwork, lerr}
					return
				}
				if vlt != nil {
					// The CA files live in the sandbox's trust directory on
					// the host (mounted read-only), kept with its egress
					// directory, so they survive podbot stop and start.
					if _, terr := installVaultTrust(ctx, conn, res.ID, es.dirs, vlt.ca.CertPEM()); terr != nil {
						err = &StepError{StepNetwork, terr}
					}
				}
			}
		}()
	}
	cfg, hc, nc := plan.Render()
	sandboxHostConfig(plan, hc)
	if err := conn.EnsureImage(ctx, plan.Image, nil); err != nil {
		return CreateResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return CreateResult{}, engine.Classify("create", conn.Endpoint().String(), plan.Name, err)
	}

	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()
	id, err := conn.CreateAndStart(dctx, plan.Name, cfg, hc, nc)
	if err != nil {
		return CreateResult{}, privilegedHint(err, plan)
	}
	if err := ctx.Err(); err != nil {
		cctx, ccancel := engine.CleanupContext(ctx)
		defer ccancel()
		if rerr := conn.Remove(cctx, id, true); rerr != nil {
			return CreateResult{}, errors.Join(engine.Classify("create", conn.Endpoint().String(), plan.Name, err), rerr)
		}
		return CreateResult{}, engine.Classify("create", conn.Endpoint().String(), plan.Name, err)
	}
	if lcs != nil {
		if err := lcs.copyIn(ctx, engineCloneIO{conn: conn, id: id, plan: plan}); err != nil {
			cctx, ccancel := engine.CleanupContext(ctx)
			defer ccancel()
			return CreateResult{}, errors.Join(err, conn.Remove(cctx, id, true))
		}
	}
	return CreateResult{ID: id, Name: plan.Name, Plan: plan}, nil
}

// createVault builds the credential vault of opts' [[secrets]] (nil for
// none) and applies it to plan: the sandbox's variables hold placeholders,
// the real values go to opts.Redactor and, through prepareEgress, to the
// proxy's secrets file in the sandbox's egress directory, which outlives
// podbot stop and start. A vault needs allowlist mode.
func createVault(plan *launchplan.Plan, opts CreateOptions) (*vault, error) {
	secrets := opts.Config.Secrets
	if len(secrets) == 0 {
		return nil, nil
	}
	if plan.Egress.Mode != egress.ModeAllowlist {
		return nil, &errdefs.ConfigError{Key: "network.mode", Reason: errdefs.ErrConflict,
			Msg: fmt.Sprintf("the %d [[secrets]] entries need network.mode = \"allowlist\" (the egress proxy); the sandbox's mode is %q", len(secrets), plan.Egress.Mode)}
	}
	v, err := newVault(plan.Name, secrets, opts.Environ, nil)
	if err != nil {
		return nil, err
	}
	if opts.Redactor != nil {
		opts.Redactor.Add(v.values()...)
	}
	if _, err := applyVault(plan, v); err != nil {
		return nil, err
	}
	return v, nil
}

// privilegedHint makes a failed privileged start say plainly that the
// privileged profile is what the engine could not run.
func privilegedHint(err error, plan launchplan.Plan) error {
	var ce *errdefs.ContainerError
	if !plan.Security.Privileged || !errors.As(err, &ce) || !errors.Is(err, errdefs.ErrUnsupported) {
		return err
	}
	out := *ce
	out.Msg = "the privileged profile (sandbox.privileged = true or --privileged) cannot run on this engine: " + ce.Msg
	return &out
}

// newSessionID returns 16 random hex characters.
func newSessionID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", &errdefs.FilesystemError{Op: "generate session id", Path: "crypto/rand", Err: err}
	}
	return hex.EncodeToString(b[:]), nil
}
