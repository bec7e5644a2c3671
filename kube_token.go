//go:build kubernetes

package podbot

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/gitcred"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/sandbox"
	"github.com/podbot/podbot/tokendaemon"
	"github.com/podbot/podbot/workspace"
)

// A GitHub installation token in a Pod. As on the engine, the token goes
// in only with podbot-sidecar as git's askpass program, which answers
// only for the clone origin: the host's podbot-sidecar is streamed into
// the Pod (kube.LaunchOptions.Sidecar, checked by size and SHA-256) and
// is read-only at the engine's path. The token, limited to the one
// repository, and its origin are written by an exec into the Pod's token
// container, on its stdin, into a memory volume the agent's container
// mounts read-only at /run/secrets (the engine's paths; see
// kube.WithTokenContainer): never in a Secret, the Pod spec, an
// environment or an argv. The run's token daemon (tokendaemon with a
// Store) rewrites it before it expires, and the new token is in the Pod
// as soon as the exec returns.

// kubeSidecarAskpass is git's askpass program in a Pod: the sidecar where
// kube streams it, which is also where the engine mounts it.
const kubeSidecarAskpass = kube.SidecarPath

// loadSidecar reads the host's podbot-sidecar once, for a Pod that gets a
// token; without one the token is refused, as on the engine.
func (b *kubeBackend) loadSidecar() error {
	if b.sidecarPath == "" {
		return &errdefs.ConfigError{Key: "sidecar", Reason: errdefs.ErrMissingRequired,
			Msg: "a GitHub token goes only into a sandbox where podbot-sidecar is git's askpass program (it gives the token to github.clone_base_url's host alone), and podbot streams it into the Pod from the host; install podbot-sidecar next to podbot or set PODBOT_SIDECAR_PATH"}
	}
	path, err := sandbox.CanonicalSidecar(b.sidecarPath)
	if err != nil {
		return err
	}
	sc, err := kube.LoadSidecar(path)
	if err != nil {
		return err
	}
	b.sidecar = sc
	return nil
}

// prepareToken is tokenCarrier's: the token's store is the Pod's Secret.
func (b *kubeBackend) prepareToken(ctx context.Context, sb *Sandbox, opts LaunchOptions, plan *launchplan.Plan, logger *slog.Logger) error {
	if b.sidecar == nil {
		if err := b.loadSidecar(); err != nil {
			return err
		}
	}
	base := opts.Config.GitHub.CloneBaseURL
	if base == "" {
		base = workspace.DefaultCloneBaseURL
	}
	origin, err := gitcred.ParseOrigin(base)
	if err != nil {
		return err
	}
	repo, err := workspace.ParseRepo(opts.Repo)
	if err != nil {
		return err
	}
	name := plan.Name
	store := &kubeTokenStore{kc: b.kc, name: name, origin: origin.String()}
	kc := b.kc
	d, err := tokendaemon.New(tokendaemon.Options{
		ContainerID:   name,
		Source:        RedactingTokenSource(opts.TokenSource, opts.Redactor),
		Repositories:  []string{repo.Name},
		GitOrigin:     origin,
		RefreshBuffer: opts.Config.GitHub.TokenRefreshBuffer,
		Logger:        logger,
		Alive:         func(ctx context.Context) (bool, error) { return podRunning(ctx, kc, name) },
		Store:         store,
	})
	if err != nil {
		return err
	}
	if _, err := d.Prepare(ctx); err != nil {
		return err
	}
	sb.token, b.token = d, store
	return plan.Apply(
		launchplan.WithGitHubScope(opts.Repo, origin.String()),
		launchplan.WithGitAskpass(kubeSidecarAskpass),
	)
}

// podRunning reports whether the sandbox Pod runs; a missing one does
// not. An API error is returned with true, so the caller keeps a token it
// cannot check.
func podRunning(ctx context.Context, kc *kube.Client, name string) (bool, error) {
	sb, err := kc.Get(ctx, name, false)
	switch {
	case err == nil:
		return sb.Running(), nil
	case errors.Is(err, errdefs.ErrNotFound):
		return false, nil
	default:
		return true, err
	}
}

// kubeTokenStore is the token daemon's store on the kubernetes backend:
// the Pod's token volume, written through its token container. Until the
// Pod runs (attach), it keeps the first token; podbot token-daemon's
// store is live from the start.
type kubeTokenStore struct {
	kc     podTokenWriter
	name   string
	origin string

	mu      sync.Mutex
	live    bool
	pending string
	// withdrawn: the token was taken out of the Pod, which gets no more.
	withdrawn bool
}

// SetToken keeps value for the Pod to be made, or writes it into the Pod;
// after withdraw it does nothing.
func (s *kubeTokenStore) SetToken(ctx context.Context, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.withdrawn {
		return nil
	}
	if !s.live {
		s.pending = value
		return nil
	}
	return s.kc.WriteToken(ctx, s.name, value, s.origin)
}

// attach writes the first token and the origin into the Pod, which now
// runs; from now on SetToken writes there.
func (s *kubeTokenStore) attach(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.kc.WriteToken(ctx, s.name, s.pending, s.origin); err != nil {
		return err
	}
	s.live, s.pending = true, ""
	return nil
}

// withdraw takes the token out of the Pod for good: a refresh racing with
// it writes nothing afterwards.
func (s *kubeTokenStore) withdraw(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.withdrawn, s.pending = true, ""
	if !s.live {
		return nil
	}
	return s.kc.WithdrawToken(ctx, s.name)
}

// checkCreateToken refuses a token for podbot create that cannot be had:
// without a GitHub App, or with a pool claim or a local clone.
func checkCreateToken(opts CreateOptions) error {
	if opts.GitHubRepo == "" {
		return nil
	}
	switch {
	case opts.TokenSource == nil:
		return &errdefs.ConfigError{Key: "github.app_id", Reason: errdefs.ErrMissingRequired,
			Msg: "--repo OWNER/NAME gives the sandbox a GitHub installation token, which needs a GitHub App: set github.app_id, github.installation_id and github.private_key_path"}
	case opts.Pool != nil:
		return &errdefs.ConfigError{Key: "pool", Reason: errdefs.ErrConflict,
			Msg: "a claimed pool member gets no GitHub token from podbot create on the kubernetes backend; drop --pool or --repo OWNER/NAME"}
	case opts.LocalClone != nil:
		return &errdefs.ConfigError{Key: "repo", Reason: errdefs.ErrConflict,
			Msg: "give one repository: a GitHub repository (OWNER/NAME) or a local one (PATH), not both"}
	}
	_, err := workspace.ParseRepo(opts.GitHubRepo)
	return err
}

// createWithToken is kube.Client.Create for podbot create with a GitHub
// repository: it mints the first token, gives the Pod the sidecar, the
// token container and the labels podbot token-daemon reads, makes the
// Pod and writes the token into it. A failure deletes the Pod.
func createWithToken(ctx context.Context, kc *kube.Client, opts CreateOptions, sidecarPath string, plan *launchplan.Plan, podOpts []kube.PodOption, ev *kube.EgressVault) (kube.Sandbox, error) {
	b := newKubeBackend(kc, sidecarPath)
	if err := b.loadSidecar(); err != nil {
		return kube.Sandbox{}, err
	}
	base := opts.Config.GitHub.CloneBaseURL
	if base == "" {
		base = workspace.DefaultCloneBaseURL
	}
	origin, err := gitcred.ParseOrigin(base)
	if err != nil {
		return kube.Sandbox{}, err
	}
	repo, err := workspace.ParseRepo(opts.GitHubRepo)
	if err != nil {
		return kube.Sandbox{}, err
	}
	store := &kubeTokenStore{kc: kc, name: plan.Name, origin: origin.String()}
	d, err := tokendaemon.New(tokendaemon.Options{
		ContainerID:  plan.Name,
		Source:       RedactingTokenSource(opts.TokenSource, opts.Redactor),
		Repositories: []string{repo.Name},
		GitOrigin:    origin,
		Alive:        func(context.Context) (bool, error) { return true, nil }, // Prepare only: create runs no refresh
		Store:        store,
	})
	if err != nil {
		return kube.Sandbox{}, err
	}
	if _, err := d.Prepare(ctx); err != nil {
		return kube.Sandbox{}, err
	}
	if err := plan.Apply(
		launchplan.WithGitHubScope(opts.GitHubRepo, origin.String()),
		launchplan.WithGitAskpass(kubeSidecarAskpass),
	); err != nil {
		return kube.Sandbox{}, err
	}
	plan.Labels[launchplan.LabelGitHubToken] = "true"
	sb, err := kc.Launch(ctx, *plan, kube.LaunchOptions{PodOptions: podOpts, Sidecar: b.sidecar, Token: true, Vault: ev})
	if err != nil {
		return kube.Sandbox{}, err
	}
	if err := store.attach(ctx); err != nil {
		return kube.Sandbox{}, errors.Join(err, kc.Delete(ctx, sb.Name))
	}
	return sb, nil
}
