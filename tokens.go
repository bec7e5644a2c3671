package podbot

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/gitcred"
	"github.com/podbot/podbot/github"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/tokendaemon"
	"github.com/podbot/podbot/workspace"
)

// GitHubAppConfig maps the configuration's [github] section to the github
// package's App settings.
func GitHubAppConfig(g config.GitHub) github.AppConfig {
	return github.AppConfig{
		AppID:            g.AppID,
		InstallationID:   g.InstallationID,
		KeyPath:          g.PrivateKeyPath,
		APIURL:           g.APIURL,
		TokenPermissions: g.TokenPermissions,
	}
}

// TokenDaemonOptions are the inputs of RunTokenDaemon.
type TokenDaemonOptions struct {
	// Container selects one container by name, id or id prefix. Exactly one
	// of Container and All is set.
	Container string
	// All keeps tokens fresh for every podbot container labelled
	// launchplan.LabelGitHubToken=true, including ones started later.
	All bool
	// RuntimeDir is $XDG_RUNTIME_DIR, where token directories live.
	RuntimeDir string
	// Source mints installation tokens (a *github.App).
	Source tokendaemon.TokenSource
	// RefreshBuffer is how long before expiry a token is replaced
	// (github.token_refresh_buffer); zero takes the tokendaemon default.
	RefreshBuffer time.Duration
	// CheckInterval is how often a container is checked while the engine's
	// event stream cannot be followed (a removal is seen at once through
	// the stream otherwise), and ListInterval how often All looks for new
	// containers; zero takes the tokendaemon defaults.
	CheckInterval, ListInterval time.Duration
	// Logger receives progress and failures (never token values); nil discards.
	Logger *slog.Logger
	// Redactor learns every token minted (the first and each refresh), so
	// Logger masks one that reaches it by any path; nil learns nothing.
	Redactor *creds.Redactor
}

// RedactingTokenSource wraps src so that every token it mints, the first
// and each refresh, is registered with r before anyone else sees it. With
// a nil r or src it returns src.
func RedactingTokenSource(src tokendaemon.TokenSource, r *creds.Redactor) tokendaemon.TokenSource {
	if src == nil || r == nil {
		return src
	}
	return redactingTokenSource{src: src, r: r}
}

type redactingTokenSource struct {
	src tokendaemon.TokenSource
	r   *creds.Redactor
}

// InstallationToken mints a token and registers its value with the redactor.
func (s redactingTokenSource) InstallationToken(ctx context.Context, repositories []string) (github.Token, error) {
	tok, err := s.src.InstallationToken(ctx, repositories)
	if tok.Value != "" {
		s.r.Add(tok.Value)
	}
	return tok, err
}

// check refuses options that name neither or both of one target and all
// targets (one and all say what they are on the backend), or that have no
// GitHub App to mint tokens.
func (opts TokenDaemonOptions) check(one, all string) error {
	if (opts.Container == "") == !opts.All {
		return &errdefs.ConfigError{Key: "container", Reason: errdefs.ErrConflict,
			Msg: "name " + one + " or ask for " + all + ", not both or neither"}
	}
	if opts.Source == nil {
		return &errdefs.ConfigError{Key: "github.app_id", Reason: errdefs.ErrMissingRequired,
			Msg: "the token daemon needs a GitHub App: set github.app_id, github.installation_id and github.private_key_path"}
	}
	return nil
}

// logger is opts.Logger, or one that discards.
func (opts TokenDaemonOptions) logger() *slog.Logger {
	if opts.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return opts.Logger
}

// RunTokenDaemon keeps GitHub installation tokens fresh in the token
// directories of running podbot containers until ctx ends, and returns nil
// then. A token directory is $RuntimeDir/podbot/<container name>/, the one
// Launch mounted read-only at /run/secrets; it is removed when its container
// stops or is removed, as soon as the engine's event stream (/events) says
// so, or within CheckInterval while that stream is unavailable.
//
// With Container set it serves that one container and also returns nil when
// the container stops or is gone. It refuses a container not created by podbot or
// created without a token mount (errdefs.ErrRefused). With All set it lists
// podbot's running containers that need tokens every ListInterval, in one
// engine call, and serves each: a container started again (podbot start) is
// served again from the next listing, with a fresh token.
func RunTokenDaemon(ctx context.Context, conn *engine.Conn, opts TokenDaemonOptions) error {
	if err := opts.check("one container (--container NAME)", "all podbot containers that need tokens (--all)"); err != nil {
		return err
	}
	logger := opts.logger()
	daemon := tokendaemon.Options{
		RuntimeDir:    opts.RuntimeDir,
		Source:        RedactingTokenSource(opts.Source, opts.Redactor),
		RefreshBuffer: opts.RefreshBuffer,
		CheckInterval: opts.CheckInterval,
		Logger:        logger,
	}
	if opts.All {
		warned := map[string]bool{} // containers already reported as unusable; only the manager's List goroutine uses it
		m, err := tokendaemon.NewManager(tokendaemon.ManagerOptions{
			Daemon: daemon,
			List: func(ctx context.Context) ([]tokendaemon.Target, error) {
				return tokenContainers(ctx, conn, opts.RuntimeDir, logger, warned)
			},
			Alive:        func(ctx context.Context, name string) (bool, error) { return containerRunning(ctx, conn, name) },
			Watch:        conn.NewEventHub().Watch, // one event stream for every container
			ListInterval: opts.ListInterval,
		})
		if err != nil {
			return err
		}
		logger.Info("token daemon serving every podbot container that needs a GitHub token")
		return m.Run(ctx)
	}

	c, err := ResolveContainer(ctx, conn, opts.Container, false)
	if err != nil {
		return err
	}
	if c.Labels[launchplan.LabelGitHubToken] != "true" {
		return &errdefs.ContainerError{Op: "token daemon", Container: c.Name, Reason: errdefs.ErrRefused,
			Msg:  "the container was created without a GitHub token mount (no " + launchplan.LabelGitHubToken + "=true label), so it cannot see a token file",
			Hint: "launch it with a github_clone workspace and a GitHub App configured"}
	}
	target, err := tokenTarget(c.Name, c.Labels, opts.RuntimeDir)
	if err != nil {
		return err
	}
	// Launch names the token directory after the container name.
	daemon.ContainerID, daemon.DirName = c.Name, target.DirName
	daemon.Repositories, daemon.GitOrigin = target.Repositories, target.GitOrigin
	daemon.Vault, daemon.Placeholder = target.Vault, target.Placeholder
	id := c.ID
	daemon.Alive = func(ctx context.Context) (bool, error) { return containerRunning(ctx, conn, id) }
	daemon.Watch = func(ctx context.Context, changed func()) error { return conn.WatchContainer(ctx, id, changed) }
	d, err := tokendaemon.New(daemon)
	if err != nil {
		return err
	}
	logger.Info("token daemon serving one container", "container", c.Name, "dir", d.Dir())
	if err := d.Run(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// tokenContainers lists, in one engine call, the running podbot containers
// that were launched with a token mount, with the repository and origin
// their labels name. A container without them is logged and skipped: its
// tokens would have the installation's full grant.
func tokenContainers(ctx context.Context, conn *engine.Conn, runtimeDir string, logger *slog.Logger, warned map[string]bool) ([]tokendaemon.Target, error) {
	rows, err := List(ctx, conn, ListOptions{Labels: map[string]string{launchplan.LabelGitHubToken: "true"}})
	if err != nil {
		return nil, err
	}
	targets := make([]tokendaemon.Target, 0, len(rows))
	for _, r := range rows {
		if r.Name == "" {
			continue
		}
		if memberTokenUnclaimed(r.Name, r.Labels) {
			continue // an unclaimed pool member: no repository, no token yet
		}
		t, err := tokenTarget(r.Name, r.Labels, runtimeDir)
		if err != nil {
			if !warned[r.Name] {
				warned[r.Name] = true
				logger.Warn("not keeping a token for this container", "container", r.Name, "err", err)
			}
			continue
		}
		targets = append(targets, t)
	}
	return targets, nil
}

// tokenTarget reads what a container's tokens are for from the labels
// Launch set: the repository (owner/name) they are limited to and the
// origin git may send them to. Without both, no token is minted. A
// container labelled LabelGitHubVault keeps its token in the credential
// vault: the target's Vault rewrites the proxy's secrets file under
// runtimeDir, and its Placeholder is the one that file holds (the one the
// sandbox knows).
func tokenTarget(name string, labels map[string]string, runtimeDir string) (tokendaemon.Target, error) {
	refuse := func(msg string) error {
		return &errdefs.ContainerError{Op: "token daemon", Container: name, Reason: errdefs.ErrRefused, Msg: msg,
			Hint: "launch it again with this podbot version, which labels the repository and clone origin"}
	}
	repoLabel, originLabel := labels[launchplan.LabelGitHubRepo], labels[launchplan.LabelGitHubOrigin]
	dirName := labels[LabelTokenDir]
	if dirName != "" && repoLabel == "" {
		// A claimed pool member: the claim recorded the scope beside its
		// token directory, which keeps the member's name.
		s, err := readTokenScope(runtimeDir, dirName)
		if err != nil {
			return tokendaemon.Target{}, &errdefs.ContainerError{Op: "token daemon", Container: name, Reason: errdefs.ErrRefused,
				Msg:  "the container is a pool member whose token scope (repository and clone origin, recorded at its claim) cannot be read: " + err.Error(),
				Hint: "an unclaimed member needs no token; remove the sandbox if it was claimed by another runtime directory"}
		}
		repoLabel, originLabel = s.Repo, s.Origin
	}
	repo, err := workspace.ParseRepo(repoLabel)
	if err != nil {
		return tokendaemon.Target{}, refuse("the container names no repository (label " + launchplan.LabelGitHubRepo +
			"), and podbot mints no token with the installation's full grant")
	}
	origin, err := gitcred.ReadOriginString(originLabel)
	if err != nil {
		return tokendaemon.Target{}, refuse("the container names no clone origin (label " + launchplan.LabelGitHubOrigin +
			"), so git in it could not tell where the token may go")
	}
	t := tokendaemon.Target{ID: name, DirName: dirName, Repositories: []string{repo.Name}, GitOrigin: origin}
	if secret, ok := labels[LabelGitHubVault]; ok {
		dirs, err := egressnet.DirsFor(runtimeDir, name)
		if err != nil {
			return tokendaemon.Target{}, err
		}
		path := dirs.VaultPath(egressnet.SecretsFile)
		ph, err := secretPlaceholder(path, secret)
		if err != nil {
			return tokendaemon.Target{}, &errdefs.ContainerError{Op: "token daemon", Container: name, Reason: errdefs.ErrRefused,
				Msg:  "the container keeps its GitHub token in the credential vault (label " + LabelGitHubVault + "), and its proxy's secrets file cannot be read: " + err.Error(),
				Hint: "remove the sandbox and launch it again"}
		}
		t.Vault, t.Placeholder = &vaultToken{name: secret, path: path}, ph
	}
	return t, nil
}

// containerRunning reports whether the container is running, as the
// engine's State.Running says. A stopped or removed container gets no more
// tokens: its daemon removes the token directory, so no token stays on disk
// while the container is stopped. A paused container counts as running. An
// engine error is returned with true, so the caller keeps a token it cannot
// check.
func containerRunning(ctx context.Context, conn *engine.Conn, ref string) (bool, error) {
	c, err := conn.Inspect(ctx, ref, false)
	switch {
	case err == nil:
		return c.ContainerJSONBase != nil && c.State != nil && c.State.Running, nil
	case errors.Is(err, errdefs.ErrNotFound):
		return false, nil
	default:
		return true, err
	}
}
