package podbot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/gitcred"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/pool"
	"github.com/podbot/podbot/sandbox"
	"github.com/podbot/podbot/termsafe"
	"github.com/podbot/podbot/tokendaemon"
	"github.com/podbot/podbot/workspace"
)

// Launch steps, in the order Launch runs them. Progress reports and
// StepError name them.
const (
	StepPlan        = "plan"
	StepImage       = "image"
	StepToken       = "github token"
	StepCreate      = "create"
	StepCredentials = "credentials"
	StepGitIdentity = "git identity"
	StepWorkspace   = "workspace"
	// StepNetwork (egress.go) runs before StepCreate and right after it.
)

// StepError says which launch step failed. It unwraps to the step's error,
// so its class (errdefs) still decides the exit code.
type StepError struct {
	Step string
	Err  error
}

func (e *StepError) Error() string { return e.Step + ": " + e.Err.Error() }

// Unwrap returns the step's error.
func (e *StepError) Unwrap() error { return e.Err }

// LaunchOptions are the inputs of Launch, shared by podbot run and podbot host.
type LaunchOptions struct {
	// Config is the loaded, validated configuration.
	Config config.Config
	// Intent is interactive (run) or hosting (host).
	Intent launchplan.Intent
	// Repo (owner/name) and Branch select a GitHub clone; empty Repo clones nothing.
	Repo, Branch string
	// HostPath, when set, bind-mounts this host directory as the workspace
	// (it overrides workspace.host_path and selects host_mount).
	HostPath string
	// LocalClone, when set, copies a host repository into the sandbox
	// (workspace.source = "local_clone"); it overrides workspace.repo_path.
	LocalClone *LocalCloneOptions
	// ConfigFiles are the paths podbot's configuration was, or would be,
	// read from (config.Loaded.Searched). A host-mount workspace that holds
	// any of them, or github.private_key_path, is refused: the sandboxed
	// agent could rewrite podbot's own settings, or read the App's key.
	ConfigFiles []string
	// ExtraArgs are appended to the agent's command.
	ExtraArgs []string
	// Name overrides the container name.
	Name string
	// AllowHosts are egress rules added to network.allow for this launch
	// (--allow-host); they need network.mode = "allowlist".
	AllowHosts []string
	// SidecarPath is the host's podbot-sidecar, mounted read-only and run as
	// the container's init. Empty runs the plan's default init.
	SidecarPath string
	// Environ is the host environment the allowlist reads from.
	Environ []string
	// HostHome is the host home directory credentials are copied from.
	HostHome string
	// RuntimeDir is $XDG_RUNTIME_DIR, where token directories live.
	RuntimeDir string
	// GitConfig reads the host's git configuration; nil skips the git identity step.
	GitConfig func(key string) (string, error)
	// TokenSource mints GitHub installation tokens; nil means no token.
	TokenSource tokendaemon.TokenSource
	// Progress receives each step as it starts and a detail line; nil discards.
	Progress func(step, detail string)
	// Logger receives diagnostics; nil discards.
	Logger *slog.Logger
	// Redactor learns the secret values passed to the agent; nil makes one.
	Redactor *creds.Redactor
	// Egress, when set, is the sandbox's egress mode and policy, replacing
	// what the configuration says (for library callers and tests).
	Egress *launchplan.Egress
	// Pool, when set, claims a ready member of this agent pool instead of
	// creating the container, then applies what is per claim (credentials,
	// git identity, the workspace clone, the agent's environment) as a cold
	// launch would; what a made-ahead member cannot take is refused (see
	// launchFromPool). The pool's template (image, network, limits)
	// overrides the configuration, warm or cold.
	Pool *pool.Spec
	// PoolWait is how long a claim waits for a ready member before it
	// launches cold.
	PoolWait time.Duration
	// OnClaim, when set, learns how the claim from Pool went, before the
	// per-claim steps run.
	OnClaim func(ClaimReport)
}

// Sandbox is a launched, running agent container: the agent is not started
// yet. Its plan's AgentEnv (the allowlisted host variables) is not in the
// container's configuration: pass it to the agent's exec (Plan.AgentExec).
// Stop stops it and removes its token directory; Close stops its token
// refresh and, if asked, removes it.
type Sandbox struct {
	// ID and Name identify the container.
	ID, Name string
	// Plan is the launch plan it was created from.
	Plan launchplan.Plan
	// Workspace is the in-container working directory of the agent.
	Workspace string

	// be is where the sandbox lives; conn is the engine behind it (nil
	// on another backend), which the engine-only steps (token daemon,
	// egress proxy, vault, local clone) use.
	be     launchBackend
	conn   *engine.Conn
	egress *egressSetup
	token  *tokendaemon.Daemon
	// tokenScope is a claimed pool member's token scope file, removed
	// with the sandbox (Close with remove).
	tokenScope string
	stopToken  context.CancelFunc
	tokenDone  chan struct{}
	// credOverrides and credForbidden go to creds.BuildOptions: the
	// vault's copy of ~/.codex/auth.json and the key it keeps out.
	credOverrides map[string][]byte
	credForbidden []string
}

// Launch runs the shared launch sequence: plan, image, GitHub token,
// create and start the hardened container, credentials, git identity and
// workspace. Any failure removes what was made (container, token directory)
// on a context detached from ctx, bounded in time, and returns a StepError.
//
// With opts.Pool set, Launch claims a ready member of that agent pool
// instead (see launchFromPool).
func Launch(ctx context.Context, conn *engine.Conn, opts LaunchOptions) (sb *Sandbox, err error) {
	return launchOn(ctx, engineBackend{conn}, conn, opts)
}

// launchOn is Launch on backend be (conn is the engine behind it, or nil):
// a claim from opts.Pool on the engine, a cold launch otherwise.
func launchOn(ctx context.Context, be launchBackend, conn *engine.Conn, opts LaunchOptions) (*Sandbox, error) {
	if opts.Pool == nil {
		return launch(ctx, be, conn, opts, nil)
	}
	if conn == nil {
		return nil, &errdefs.ConfigError{Key: "pool", Reason: errdefs.ErrUnsupported,
			Msg: "podbot run and podbot host claim pool members on the engine backend only; drop --pool or use --backend engine"}
	}
	return launchFromPool(ctx, conn, opts)
}

// launch is Launch on backend be; conn is the engine behind be, nil on
// another backend (whose adapt refuses the engine-only steps). tmpl, when
// set, is the template of the pool a claim found empty, applied to the
// plan as a member's.
func launch(ctx context.Context, be launchBackend, conn *engine.Conn, opts LaunchOptions, tmpl *pool.Spec) (sb *Sandbox, err error) {
	progress := opts.Progress
	if progress == nil {
		progress = func(string, string) {}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// made is what this launch has made so far. The returns below set the
	// named result sb to nil on failure, so cleanup must not go through it.
	made := &Sandbox{be: be, conn: conn}
	sb = made
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

	progress(StepPlan, "resolving the launch plan")
	if err := be.check(opts); err != nil {
		return nil, &StepError{StepPlan, err}
	}
	req, mount, err := launchRequest(conn, opts)
	if err != nil {
		return nil, &StepError{StepPlan, err}
	}
	if tmpl != nil {
		applyAgentTemplate(&req, *tmpl)
	}
	if mount != nil {
		progress(StepWorkspace, "host mount "+mount.String())
	}
	plan, err := launchplan.Normalize(req)
	if err != nil {
		return nil, &StepError{StepPlan, err}
	}
	if err := be.adapt(opts, req, &plan); err != nil {
		return nil, &StepError{StepPlan, err}
	}
	var lcs *localCloneSetup
	if lc := localCloneOf(opts); lc != nil && req.Workspace.Strategy == launchplan.WorkspaceLocalClone {
		progress(StepWorkspace, "checking "+termsafe.Line(lc.Path)+" and bundling its history")
		if lcs, err = prepareLocalClone(ctx, opts.Environ, *lc, plan.Name, plan.WorkingDir); err != nil {
			return nil, &StepError{StepWorkspace, err}
		}
		defer lcs.cleanup()
		for k, v := range lcs.info.Labels() {
			plan.Labels[k] = v
		}
	}
	sb.Name, sb.Plan, sb.Workspace = plan.Name, plan, plan.WorkingDir

	progress(StepImage, plan.Image)
	if err := be.ensureImage(ctx, plan.Image); err != nil {
		return nil, &StepError{StepImage, err}
	}

	secrets := opts.Config.Secrets
	ghIdx, err := githubSecret(secrets)
	if err != nil {
		return nil, &StepError{StepPlan, err}
	}
	var ght *vaultToken
	var gh *ghToken
	if tc, ok := be.(tokenCarrier); ok && opts.TokenSource != nil && req.Workspace.Strategy == launchplan.WorkspaceGitHubClone {
		// The backend carries the token into the sandbox itself.
		progress(StepToken, "acquiring an installation token limited to "+opts.Repo)
		if err := tc.prepareToken(ctx, sb, opts, &plan, logger); err != nil {
			return nil, &StepError{StepToken, err}
		}
		sb.Plan = plan
	} else if opts.TokenSource != nil && req.Workspace.Strategy == launchplan.WorkspaceGitHubClone {
		progress(StepToken, "acquiring an installation token")
		origin, err := tokenOrigin(opts)
		if err != nil {
			return nil, &StepError{StepToken, err}
		}
		if ghIdx >= 0 {
			// Vault mode: the token daemon gives every token to the vault
			// and writes the placeholder into the mounted token file.
			if err := checkGitHubSecret(ghIdx, secrets[ghIdx], origin); err != nil {
				return nil, &StepError{StepToken, err}
			}
			name := secrets[ghIdx].Name
			placeholder, err := egress.NewPlaceholder(name)
			if err != nil {
				return nil, &StepError{StepToken, err}
			}
			ght = &vaultToken{name: name}
			gh = &ghToken{placeholder: placeholder}
			progress(StepToken, fmt.Sprintf("the token goes into the credential vault as secret %q; the sandbox's %s holds its placeholder", name, tokendaemon.ContainerTokenPath))
		}
		if err := sb.prepareToken(ctx, opts, plan.Name, "", origin, ght, placeholderOf(gh), logger); err != nil {
			return nil, &StepError{StepToken, err}
		}
		if err := plan.Apply(
			launchplan.WithTokenMount(sb.token.TokenPath()),
			launchplan.WithGitHubScope(opts.Repo, origin.String()),
			launchplan.WithGitAskpass(SidecarTarget),
		); err != nil {
			return nil, &StepError{StepToken, err}
		}
		if ght != nil {
			gh.value = ght.current()
			plan.Labels[LabelGitHubVault] = ght.name
		}
		sb.Plan = plan
	} else if ghIdx >= 0 {
		// No token for this sandbox: the github-app secret has no value,
		// and the vault goes without it.
		progress(StepToken, fmt.Sprintf("secret %q (github-app) is not used: this sandbox clones no GitHub repository", secrets[ghIdx].Name))
		secrets = slices.Delete(slices.Clone(secrets), ghIdx, ghIdx+1)
	}
	sidecar := ""
	if opts.SidecarPath != "" {
		sidecar, err = sandbox.CanonicalSidecar(opts.SidecarPath)
		if err != nil {
			return nil, &StepError{StepPlan, err}
		}
		if err := plan.Apply(sandbox.WithSidecarMount(sidecar)); err != nil {
			return nil, &StepError{StepPlan, err}
		}
		sb.Plan = plan
	}
	applyEgressMode(&plan)
	var vlt *vault
	codex, err := prepareCodexVault(opts, plan.Egress.Mode)
	if err != nil {
		return nil, &StepError{StepCredentials, err}
	}
	var implicit []implicitSecret
	if codex != nil {
		implicit = append(implicit, codex.secret)
		for _, w := range codex.warnings {
			progress(StepCredentials, "warning: "+w)
		}
	}
	if len(secrets) > 0 || len(implicit) > 0 {
		vc, carries := be.(vaultCarrier)
		if conn == nil && !carries {
			return nil, &StepError{StepNetwork, &errdefs.ConfigError{Key: "secrets", Reason: errdefs.ErrUnsupported,
				Msg: "the credential vault ([[secrets]], or the API key of ~/.codex/auth.json) is held by an egress proxy this backend does not run: use --backend engine, or log codex in without an API key"}}
		}
		if plan.Egress.Mode != egress.ModeAllowlist {
			return nil, &StepError{StepNetwork, &errdefs.ConfigError{Key: "network.mode", Reason: errdefs.ErrConflict,
				Msg: fmt.Sprintf("the %d [[secrets]] entries need network.mode = \"allowlist\" (the egress proxy); the sandbox's mode is %q", len(secrets), plan.Egress.Mode)}}
		}
		if vlt, err = newVault(plan.Name, secrets, opts.Environ, gh, implicit...); err != nil {
			return nil, &StepError{StepNetwork, err}
		}
		if codex != nil {
			auth, err := codex.auth.WithAPIKey(vlt.placeholder(CodexSecretName))
			if err != nil {
				return nil, &StepError{StepCredentials, err}
			}
			sb.credOverrides = map[string][]byte{creds.CodexAuthName: auth}
			sb.credForbidden = []string{codex.auth.APIKey}
			progress(StepCredentials, "the API key of ~/.codex/auth.json stays in the credential vault (secret "+CodexSecretName+", sent to "+codex.hosts()+"); the sandbox's copy holds a placeholder")
			if codex.auth.HasTokens {
				progress(StepCredentials, "the ChatGPT login tokens of ~/.codex/auth.json still enter the sandbox (the vault cannot hold OAuth tokens)")
			}
		}
		if opts.Redactor != nil {
			opts.Redactor.Add(vlt.values()...)
		}
		dropped, err := applyVault(&plan, vlt)
		if err != nil {
			return nil, &StepError{StepNetwork, err}
		}
		if conn == nil {
			if err := vc.carryVault(vlt); err != nil {
				return nil, &StepError{StepNetwork, err}
			}
		}
		names := make([]string, 0, len(vlt.secrets))
		for _, s := range vlt.secrets {
			names = append(names, s.Name)
		}
		progress(StepNetwork, fmt.Sprintf("credential vault: %d secret(s) (%s) held by the egress proxy; the sandbox gets placeholders", len(names), strings.Join(names, ", ")))
		if len(dropped) > 0 {
			progress(StepNetwork, "agent.env_allowlist: not passing "+strings.Join(dropped, ", ")+" (the vault holds that value; the sandbox gets a placeholder)")
			logger.Info("vault: agent variables dropped", "vars", dropped)
		}
	}
	if plan.Egress.Mode == egress.ModeAllowlist && conn != nil {
		progress(StepNetwork, "sandbox network "+egressnet.NetworkName(plan.Name)+" and egress proxy "+egressnet.ProxyName(plan.Name))
		sb.egress, err = prepareEgress(ctx, conn, &plan, sidecar, opts.RuntimeDir, vlt)
		if err != nil {
			return nil, &StepError{StepNetwork, err}
		}
		if ght != nil && vlt != nil {
			// The secrets file holds the token Prepare minted; from now on
			// each refresh (runToken, below) rewrites it.
			ght.attach(sb.egress.dirs.VaultPath(egressnet.SecretsFile))
		}
	}
	// The git identity needs no exec: a read-only root filesystem takes it
	// in the environment, any other in the credentials upload.
	var gitConfig []byte
	if opts.GitConfig != nil {
		name, email := creds.GitIdentity(ctx, opts.GitConfig)
		if env := creds.GitConfigEnv(name, email); plan.Security.ReadOnlyRootfs && env != nil {
			plan.Env = append(plan.Env, env...)
			progress(StepGitIdentity, "user.name and user.email in the environment (GIT_CONFIG_*: the root filesystem is read-only)")
		} else if !plan.Security.ReadOnlyRootfs {
			gitConfig = creds.GitConfigFile(name, email)
		}
	}
	sb.Plan = plan
	arch, err := sb.buildCredentials(ctx, opts, gitConfig)
	if err != nil {
		return nil, &StepError{StepCredentials, err}
	}

	progress(StepCreate, plan.Name)
	id, err := be.start(ctx, plan, arch)
	if err != nil {
		return nil, &StepError{StepCreate, err}
	}
	sb.ID = id
	if sb.egress != nil {
		if err := lockNetwork(ctx, conn, id, plan.Image, sidecar, sb.egress.gateways); err != nil {
			return nil, &StepError{StepNetwork, err}
		}
	}
	if vlt != nil && sb.egress == nil {
		// The backend's own sandbox wrote its trust files as it started.
		progress(StepNetwork, "sandbox CA in "+VaultBundlePath+" (after the image's "+SystemCABundle+", if it has one) and "+VaultCAPath)
	} else if vlt != nil {
		system, err := installVaultTrust(ctx, conn, id, sb.egress.dirs, vlt.ca.CertPEM())
		if err != nil {
			return nil, &StepError{StepNetwork, err}
		}
		detail := "sandbox CA installed in " + VaultBundlePath + " (with the image's " + SystemCABundle + ") and " + VaultCAPath
		if !system {
			detail = "sandbox CA installed in " + VaultBundlePath + " and " + VaultCAPath + " (the image has no " + SystemCABundle + ")"
		}
		progress(StepNetwork, detail)
	}
	if sb.token != nil {
		sb.runToken(logger)
	}

	if arch != nil && len(arch.Paths) > 0 {
		progress(StepCredentials, fmt.Sprintf("copying %v into %s", arch.Paths, arch.TargetHome))
	}
	if arch != nil && arch.GitConfig != "" {
		progress(StepGitIdentity, "user.name and user.email in "+arch.GitConfig)
	}
	if err := be.installCredentials(ctx, sb, arch); err != nil {
		return nil, &StepError{StepCredentials, err}
	}
	if req.Workspace.Strategy == launchplan.WorkspaceGitHubClone && opts.Repo != "" {
		progress(StepWorkspace, fmt.Sprintf("cloning %s at %s", opts.Repo, opts.Branch))
		if err := sb.clone(ctx, opts); err != nil {
			return nil, &StepError{StepWorkspace, err}
		}
	}
	if lcs != nil {
		progress(StepWorkspace, fmt.Sprintf("copying %s at %s into %s on branch %s", termsafe.Line(lcs.info.Repo), lcs.info.Base[:12], lcs.info.Dir, lcs.info.Branch))
		var sio cloneIO = engineCloneIO{conn: conn, id: sb.ID, plan: sb.Plan}
		if cc, ok := be.(cloneCarrier); ok {
			sio = cc.localCloneIO(sb.ID)
		}
		if err := lcs.copyIn(ctx, sio); err != nil {
			return nil, &StepError{StepWorkspace, err}
		}
	}
	return sb, nil
}

// launchRequest maps the configuration and options to a launch request.
func launchRequest(conn *engine.Conn, opts LaunchOptions) (launchplan.Request, *workspace.Mount, error) {
	cfg := opts.Config
	kind, err := kindLaunch(cfg.Agent)
	if err != nil {
		return launchplan.Request{}, nil, err
	}
	env, secrets, err := creds.Passthrough(append(slices.Clone(cfg.Agent.EnvAllowlist), kind.keyEnv...), cfg.Agent.EnvRequired, opts.Environ)
	if err != nil {
		return launchplan.Request{}, nil, err
	}
	env = mergeEnv(kind.env, env)
	if opts.Redactor != nil {
		opts.Redactor.Add(secrets...)
	}
	session, err := newSessionID()
	if err != nil {
		return launchplan.Request{}, nil, err
	}
	allowHosts := opts.AllowHosts
	if cfg.Network.Mode == config.NetworkAllowlist {
		// Only the allowlist uses rules; the other modes refuse them.
		allowHosts = append(slices.Clone(allowHosts), kind.allowHosts...)
	}
	eg, err := EgressFromConfig(cfg, cfg.Agent.Kind, allowHosts...)
	if err != nil {
		return launchplan.Request{}, nil, err
	}
	req := launchplan.Request{
		Intent: opts.Intent,
		Agent: launchplan.Agent{
			Kind:      launchplan.AgentKind(cfg.Agent.Kind),
			Mode:      launchplan.AgentMode(cfg.Agent.Mode),
			Command:   cfg.Agent.Command,
			Args:      cfg.Agent.Args,
			ExtraArgs: append(slices.Clone(kind.args), opts.ExtraArgs...),
		},
		Image:             cfg.Image,
		Name:              opts.Name,
		SessionID:         session,
		AgentEnv:          env,
		EngineSocketPaths: EngineSocketPaths(endpointOf(conn)),
		Sandbox:           SandboxFromConfig(cfg.Sandbox),
		Version:           Version,
		Egress:            eg,
	}
	withEgressNetwork(&req)
	if opts.SidecarPath != "" {
		req.InitCommand = []string{SidecarTarget, "init"}
	}
	if opts.Egress != nil {
		req.Egress = *opts.Egress
	}
	hostPath := opts.HostPath
	if hostPath == "" && cfg.Workspace.Source == config.SourceHostMount {
		hostPath = cfg.Workspace.HostPath
	}
	if lc := localCloneOf(opts); lc != nil && opts.HostPath == "" {
		req.Workspace = localCloneWorkspace(*lc, cfg.Workspace.BaseDir)
		return req, nil, nil
	}
	if cfg.Workspace.Source == config.SourceLocalClone && opts.HostPath == "" && opts.Repo == "" {
		return launchplan.Request{}, nil, &errdefs.ConfigError{Key: "workspace.repo_path", Reason: errdefs.ErrMissingRequired,
			Msg: "workspace.source = \"local_clone\" needs workspace.repo_path or --repo PATH (the host repository to copy)"}
	}
	switch {
	case hostPath != "":
		m, err := workspace.ResolveHostMount(hostPath, cfg.Workspace.ContainerPath, hostMountPolicy(opts, req.EngineSocketPaths))
		if err != nil {
			return launchplan.Request{}, nil, err
		}
		if err := checkTrustedFiles(m, opts.ConfigFiles, cfg.GitHub.PrivateKeyPath); err != nil {
			return launchplan.Request{}, nil, err
		}
		req.Workspace = launchplan.Workspace{Strategy: launchplan.WorkspaceHostMount, HostPath: m.Source, ContainerPath: m.Target}
		if m.OwnerKnown {
			req.Workspace.Owner = &launchplan.HostOwner{UID: m.UID, GID: m.GID}
		}
		if m.GitDir != "" && !cfg.Sandbox.Privileged {
			if err := workspace.EnsureHooksDir(m); err != nil {
				return launchplan.Request{}, nil, err
			}
			req.Workspace.GitDir = m.GitDir
		}
		return req, &m, nil
	case opts.Repo != "":
		repo, err := workspace.ParseRepo(opts.Repo)
		if err != nil {
			return launchplan.Request{}, nil, err
		}
		if err := workspace.ValidateBranch(opts.Branch); err != nil {
			return launchplan.Request{}, nil, err
		}
		req.Workspace = launchplan.Workspace{Strategy: launchplan.WorkspaceGitHubClone, BaseDir: cfg.Workspace.BaseDir,
			ContainerPath: workspace.CloneDir(repo, cfg.Workspace.BaseDir)}
	default:
		req.Workspace = launchplan.Workspace{Strategy: launchplan.WorkspaceNone}
	}
	return req, nil, nil
}

// localCloneOf is the launch's local clone: opts.LocalClone, or
// workspace.repo_path when workspace.source is local_clone.
func localCloneOf(opts LaunchOptions) *LocalCloneOptions {
	if opts.LocalClone != nil {
		return opts.LocalClone
	}
	w := opts.Config.Workspace
	if w.Source == config.SourceLocalClone && w.RepoPath != "" {
		return &LocalCloneOptions{Path: w.RepoPath}
	}
	return nil
}

// startPlan creates and starts the plan's container. The engine calls run
// on a context detached from ctx (bounded in time); if ctx was cancelled
// meanwhile or start failed, the container is removed, so an interrupted
// start never leaves one behind.
func startPlan(ctx context.Context, conn *engine.Conn, plan launchplan.Plan) (string, error) {
	cfg, hc, nc := plan.Render()
	sandboxHostConfig(plan, hc)
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()
	id, err := conn.CreateAndStart(dctx, plan.Name, cfg, hc, nc)
	if err != nil {
		return "", privilegedHint(err, plan)
	}
	if err := ctx.Err(); err != nil {
		cctx, ccancel := engine.CleanupContext(ctx)
		defer ccancel()
		cerr := engine.Classify("create", conn.Endpoint().String(), plan.Name, err)
		if rerr := conn.Remove(cctx, id, true); rerr != nil {
			return "", errors.Join(cerr, rerr)
		}
		return "", cerr
	}
	return id, nil
}

// tokenOrigin checks that a token may go into the sandbox and returns the
// one origin git there may send it to. The token goes in only with
// podbot-sidecar, which is git's askpass program there and answers only for
// that origin; the image's own helper is never trusted with it.
func tokenOrigin(opts LaunchOptions) (gitcred.Origin, error) {
	if opts.SidecarPath == "" {
		return gitcred.Origin{}, &errdefs.ConfigError{Key: "sidecar", Reason: errdefs.ErrMissingRequired,
			Msg: "a GitHub token goes only into a sandbox with podbot-sidecar mounted: it is git's askpass program there and gives the token to github.clone_base_url's host alone; install podbot-sidecar next to podbot or set PODBOT_SIDECAR_PATH"}
	}
	base := opts.Config.GitHub.CloneBaseURL
	if base == "" {
		base = workspace.DefaultCloneBaseURL
	}
	return gitcred.ParseOrigin(base)
}

// placeholderOf is gh's placeholder, or "" without one.
func placeholderOf(gh *ghToken) string {
	if gh == nil {
		return ""
	}
	return gh.placeholder
}

// prepareToken makes the sandbox's token daemon and mints the first token.
// With vault set (a github-app secret), tokens go to the vault and the
// token file holds placeholder.
//
// dirName, when set, names the token directory instead of name (a claimed
// pool member's keeps the member's name).
func (sb *Sandbox) prepareToken(ctx context.Context, opts LaunchOptions, name, dirName string, origin gitcred.Origin, vault *vaultToken, placeholder string, logger *slog.Logger) error {
	if opts.RuntimeDir == "" {
		return &errdefs.ConfigError{Key: "XDG_RUNTIME_DIR", Reason: errdefs.ErrMissingRequired,
			Msg: "GitHub tokens live under $XDG_RUNTIME_DIR/podbot; set XDG_RUNTIME_DIR to a private directory"}
	}
	repo, err := workspace.ParseRepo(opts.Repo)
	if err != nil {
		return err
	}
	conn := sb.conn
	d, err := tokendaemon.New(tokendaemon.Options{
		ContainerID:   name,
		DirName:       dirName,
		RuntimeDir:    opts.RuntimeDir,
		Source:        RedactingTokenSource(opts.TokenSource, opts.Redactor),
		Repositories:  []string{repo.Name},
		GitOrigin:     origin,
		RefreshBuffer: opts.Config.GitHub.TokenRefreshBuffer,
		Logger:        logger,
		Alive:         func(ctx context.Context) (bool, error) { return containerRunning(ctx, conn, name) },
		Watch:         func(ctx context.Context, changed func()) error { return conn.WatchContainer(ctx, name, changed) },
		Vault:         tokenVaultOf(vault),
		Placeholder:   placeholder,
	})
	if err != nil {
		return err
	}
	sb.token = d
	_, err = d.Prepare(ctx)
	return err
}

// tokenVaultOf is v as a tokendaemon.TokenVault, nil (not a typed nil)
// without one.
func tokenVaultOf(v *vaultToken) tokendaemon.TokenVault {
	if v == nil {
		return nil
	}
	return v
}

// runToken keeps the token fresh in the background until Close.
func (sb *Sandbox) runToken(logger *slog.Logger) {
	ctx, cancel := context.WithCancel(context.Background())
	sb.stopToken = cancel
	sb.tokenDone = make(chan struct{})
	go func() {
		defer close(sb.tokenDone)
		if err := sb.token.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			logger.Warn("token refresh stopped", "container", sb.Name, "error", err)
		}
	}()
}

// buildCredentials reads the selected credential directories and the git
// identity file (gitConfig, when set) into one archive for the agent's
// home; nil when there is nothing to put in.
func (sb *Sandbox) buildCredentials(ctx context.Context, opts LaunchOptions, gitConfig []byte) (*creds.Archive, error) {
	c := opts.Config.Creds
	copyClaude, copyCodex := c.CopyClaude && opts.HostHome != "", c.CopyCodex && opts.HostHome != ""
	if !copyClaude && !copyCodex && gitConfig == nil {
		return nil, nil
	}
	bo := creds.BuildOptions{HostHome: opts.HostHome, CopyClaude: copyClaude, CopyCodex: copyCodex, Exclude: c.Exclude,
		TargetHome: sb.Plan.Home, Overrides: sb.credOverrides, Forbidden: sb.credForbidden, GitConfig: gitConfig}
	if uid, gid, ok := sb.Plan.NumericUser(); ok {
		bo.UID, bo.GID = uid, gid
	}
	return creds.Build(ctx, bo)
}

func (sb *Sandbox) clone(ctx context.Context, opts LaunchOptions) error {
	repo, err := workspace.ParseRepo(opts.Repo)
	if err != nil {
		return err
	}
	cmds, err := workspace.CloneCommands(repo, opts.Branch, opts.Config.Workspace.BaseDir, opts.Config.GitHub.CloneBaseURL)
	if err != nil {
		return err
	}
	// With a sidecar mounted it is git's askpass program: it answers only
	// for the clone origin. Without one there is no token to hand out.
	askpass := ""
	if opts.SidecarPath != "" || sb.token != nil {
		askpass = SidecarTarget
	}
	env := workspace.CloneEnv(askpass)
	for i, argv := range cmds {
		var out bytes.Buffer
		if err := sb.run(ctx, argv, env, "", &out); err != nil {
			return err
		}
		if i == len(cmds)-1 {
			if err := workspace.CheckHEAD(out.String(), opts.Branch); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxStepOutput bounds what a launch step's exec may print into memory.
const maxStepOutput = 64 << 10

// run executes argv in the sandbox as the plan's user and fails on a
// non-zero exit, quoting the end of its stderr.
func (sb *Sandbox) run(ctx context.Context, argv, env []string, dir string, stdout *bytes.Buffer) error {
	var errBuf bytes.Buffer
	opts := engine.ExecOptions{Cmd: argv, Env: env, WorkDir: dir, User: sb.Plan.User,
		Stderr: &limitedBuffer{buf: &errBuf, max: maxStepOutput}}
	if stdout != nil {
		opts.Stdout = &limitedBuffer{buf: stdout, max: maxStepOutput}
	}
	code, err := sb.backend().Exec(ctx, sb.ID, opts)
	if err != nil {
		return err
	}
	if code != 0 {
		return &errdefs.ContainerError{Op: "exec " + argv[0], Container: sb.Name, Reason: errdefs.ErrExecFailed,
			Msg: fmt.Sprintf("exited with status %d: %s", code, lastLines(errBuf.String(), 3))}
	}
	return nil
}

// Stop stops the container (SIGTERM to its init, SIGKILL after timeout),
// then stops the token refresh and removes the token directory, so no token
// stays on disk for a stopped container. The container stays, and
// podbot start (see Start) can start it again with a fresh token.
func (sb *Sandbox) Stop(ctx context.Context, timeout time.Duration) error {
	if sb == nil {
		return nil
	}
	var errs []error
	if sb.ID != "" {
		if err := sb.backend().stop(ctx, sb.ID, timeout); err != nil {
			errs = append(errs, err)
		}
	}
	if sb.egress != nil {
		if err := sb.conn.Stop(ctx, egressnet.ProxyName(sb.egress.name), timeout); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	sb.stopRefresh()
	if sb.token != nil {
		if err := sb.token.Remove(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stopRefresh ends the background token refresh, if one runs, and waits
// for it a bounded time.
func (sb *Sandbox) stopRefresh() {
	if sb.stopToken == nil {
		return
	}
	sb.stopToken()
	sb.stopToken = nil
	select {
	case <-sb.tokenDone:
	case <-time.After(5 * time.Second):
	}
}

// Close stops the token refresh and, when remove is set, removes the
// container and its token directory. It is safe on a partly launched sandbox.
func (sb *Sandbox) Close(ctx context.Context, remove bool) error {
	if sb == nil {
		return nil
	}
	sb.stopRefresh()
	var errs []error
	if remove && sb.ID != "" {
		if err := sb.backend().remove(ctx, sb.ID); err != nil {
			errs = append(errs, err)
		}
	}
	if remove && sb.egress != nil {
		if err := sb.egress.teardown(ctx, sb.conn); err != nil {
			errs = append(errs, err)
		}
	}
	if remove && sb.token != nil {
		if err := sb.token.Remove(); err != nil {
			errs = append(errs, err)
		}
	}
	if remove && sb.tokenScope != "" {
		if err := os.Remove(sb.tokenScope); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, &errdefs.FilesystemError{Op: "remove", Path: sb.tokenScope, Msg: "cannot remove the token scope file", Err: err})
		}
	}
	return errors.Join(errs...)
}

// hostMountPolicy is what a host-mount workspace is checked against: the
// allowed roots, and every host path that would let the sandbox out or
// carry a secret away (podbot's config and token directories, the engine
// socket, the home directory and its credentials).
func hostMountPolicy(opts LaunchOptions, sockets []string) workspace.HostMountPolicy {
	cfg := opts.Config
	p := workspace.HostMountPolicy{
		AllowedRoots:   cfg.Workspace.AllowedRoots,
		Home:           opts.HostHome,
		MaxScanEntries: int(cfg.Workspace.MaxScanEntries),
	}
	add := func(path, what string) {
		if path != "" {
			p.Protected = append(p.Protected, workspace.Protected{Path: path, What: what})
		}
	}
	// Config files and the App key themselves are checkTrustedFiles' job;
	// these are the directories around them.
	add("/etc/podbot", "podbot's system config directory")
	if opts.RuntimeDir != "" {
		add(filepath.Join(opts.RuntimeDir, "podbot"), "podbot's token and egress directories")
	} else if root, err := egressnet.StateRoot(""); err == nil {
		add(root, "podbot's egress policy and log directories")
	}
	for _, s := range sockets {
		add(s, "the container engine socket")
	}
	return p
}

// checkTrustedFiles refuses a host-mount workspace that holds (or reaches
// through a symlink the sandbox could repoint) a file podbot trusts:
// a config file that sets podbot's security settings, or the GitHub App
// private key. Errors are *errdefs.ConfigError with ErrRefused, or
// *errdefs.FilesystemError when a path cannot be resolved.
func checkTrustedFiles(m workspace.Mount, configFiles []string, privateKey string) error {
	where := fmt.Sprintf("the host-mount workspace %s (mounted at %s)", m.Source, m.Target)
	for _, f := range configFiles {
		resolved, inside, err := m.Holds(f)
		if err != nil {
			return err
		}
		if inside {
			return &errdefs.ConfigError{Key: "workspace.host_path", Reason: errdefs.ErrRefused,
				Msg: fmt.Sprintf("podbot's config file %s%s lies inside %s: the sandboxed agent could write podbot's "+
					"settings (sandbox.privileged, agent.allow_host_delegation, ...) for the next launch; keep the config "+
					"file outside the workspace and name it with --config or PODBOT_CONFIG_PATH, or mount a directory "+
					"that does not hold it", f, resolvedNote(f, resolved), where)}
		}
	}
	if privateKey != "" {
		resolved, inside, err := m.Holds(privateKey)
		if err != nil {
			return err
		}
		if inside {
			return &errdefs.ConfigError{Key: "github.private_key_path", Reason: errdefs.ErrRefused,
				Msg: fmt.Sprintf("the GitHub App private key %s%s lies inside %s: the sandboxed agent could read or "+
					"replace it; move the key outside the workspace and set github.private_key_path to its new path, "+
					"or mount a directory that does not hold it", privateKey, resolvedNote(privateKey, resolved), where)}
		}
	}
	return nil
}

// resolvedNote names where p resolves to, when that differs from p.
func resolvedNote(p, resolved string) string {
	if abs, err := filepath.Abs(p); err == nil && abs == resolved {
		return ""
	}
	return " (resolved " + resolved + ")"
}

// endpointOf is conn's endpoint, the zero one without an engine.
func endpointOf(conn *engine.Conn) engine.Endpoint {
	if conn == nil {
		return engine.Endpoint{}
	}
	return conn.Endpoint()
}
