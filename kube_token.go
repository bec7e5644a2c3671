//go:build kubernetes

package podbot

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

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
// repository, and its origin are keys of the sandbox's own Secret,
// mounted read-only at /run/secrets (the engine's paths): never in the
// Pod spec, its environment or an exec's argv. The run's token daemon
// (tokendaemon with a Store) replaces the token in the Secret before it
// expires; the kubelet brings the new file into the Pod after its sync
// delay, which the refresh margin (at least kubeMinRefreshBuffer) covers
// with room to spare, as GitHub keeps the old token valid until it
// expires.

// kubeMinRefreshBuffer is the least time before expiry a token is
// replaced on the kubernetes backend: the kubelet's sync of a changed
// Secret into a running Pod takes up to its sync period (1 minute by
// default) plus its cache's TTL; this covers twice that.
const kubeMinRefreshBuffer = 3 * time.Minute

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
		RefreshBuffer: max(opts.Config.GitHub.TokenRefreshBuffer, kubeMinRefreshBuffer),
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
// the sandbox Pod's Secret. Until the Pod is made (attach), it keeps the
// first token for start to put into the new Secret.
type kubeTokenStore struct {
	kc     *kube.Client
	name   string
	origin string

	mu      sync.Mutex
	live    bool
	pending string
}

// SetToken keeps value for the Secret to be made, or replaces the token
// in the Secret.
func (s *kubeTokenStore) SetToken(ctx context.Context, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.live {
		s.pending = value
		return nil
	}
	return s.kc.UpdateToken(ctx, s.name, value)
}

// first is the token and origin the new Secret holds.
func (s *kubeTokenStore) first() (token, origin string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending, s.origin
}

// attach says the Secret exists: from now on SetToken updates it.
func (s *kubeTokenStore) attach() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live, s.pending = true, ""
}
