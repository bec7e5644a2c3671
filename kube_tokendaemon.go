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
	"github.com/podbot/podbot/tokendaemon"
	"github.com/podbot/podbot/workspace"
)

// podTokenWriter puts a token into a sandbox Pod and takes it out again:
// *kube.Client, by an exec into the Pod's token container.
type podTokenWriter interface {
	WriteToken(ctx context.Context, name, token, origin string) error
	WithdrawToken(ctx context.Context, name string) error
}

// RunTokenDaemonOnKubernetes is RunTokenDaemon for sandbox Pods: it keeps
// the GitHub installation token fresh in Pods made by CreateOnKubernetes
// with a GitHub repository (label launchplan.LabelGitHubToken=true, the
// repository and clone origin in the annotations launchplan.LabelGitHubRepo
// and LabelGitHubOrigin), writing each token by an exec into the Pod's
// token container as podbot run does on the cluster. opts.RuntimeDir is
// not used: nothing is written on the host.
//
// It follows the namespace's token-carrying Pods over one watch of the API
// server (kube.PodHub): a deleted Pod's daemon stops at once, and with All
// a new Pod is served at once. While the watch is unavailable it checks
// every CheckInterval (and, with All, lists every ListInterval) and opens
// the watch again with backoff.
//
// With Container set it serves that one Pod and returns nil once the Pod
// stops running, is being deleted or is gone (replaced by another Pod of
// the same name counts as gone); a Pod without the label is refused
// (errdefs.ErrRefused). With All it serves every such Pod until ctx ends
// and returns nil then.
func RunTokenDaemonOnKubernetes(ctx context.Context, kc *kube.Client, opts TokenDaemonOptions) error {
	return runKubeTokenDaemon(ctx, kc, kc, opts)
}

func runKubeTokenDaemon(ctx context.Context, kc *kube.Client, w podTokenWriter, opts TokenDaemonOptions) error {
	if err := opts.check("one Pod (NAME or --container NAME)", "all podbot Pods that carry a token (--all)"); err != nil {
		return err
	}
	logger := opts.logger()
	hub := kc.NewPodHub(map[string]string{launchplan.LabelGitHubToken: "true"})
	daemon := tokendaemon.Options{
		Source:        RedactingTokenSource(opts.Source, opts.Redactor),
		RefreshBuffer: opts.RefreshBuffer,
		CheckInterval: opts.CheckInterval,
		Logger:        logger,
	}
	if opts.All {
		pods := &servedPods{uids: map[string]string{}, warned: map[string]bool{}}
		m, err := tokendaemon.NewManager(tokendaemon.ManagerOptions{
			Daemon: daemon,
			Stores: true,
			List: func(ctx context.Context) ([]tokendaemon.Target, error) {
				return pods.list(ctx, kc, w, logger)
			},
			Alive:        pods.alive(kc),
			Watch:        hub.Watch,
			Changes:      hub.WatchAll,
			ListInterval: opts.ListInterval,
		})
		if err != nil {
			return err
		}
		logger.Info("token daemon serving every podbot Pod that carries a GitHub token", "namespace", kc.Namespace())
		return m.Run(ctx)
	}

	sb, err := kc.Get(ctx, opts.Container, false)
	if err != nil {
		return err
	}
	target, err := podTokenTarget(sb, w)
	if err != nil {
		return err
	}
	daemon.ContainerID = sb.Name
	daemon.Repositories, daemon.GitOrigin, daemon.Store = target.Repositories, target.GitOrigin, target.Store
	name, uid := sb.Name, sb.UID
	daemon.Alive = func(ctx context.Context) (bool, error) { return podServed(ctx, kc, name, uid) }
	daemon.Watch = func(ctx context.Context, changed func()) error { return hub.Watch(ctx, name, changed) }
	d, err := tokendaemon.New(daemon)
	if err != nil {
		return err
	}
	logger.Info("token daemon serving one Pod", "pod", name, "namespace", kc.Namespace())
	if err := d.Run(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// podTokenTarget reads what a Pod's tokens are for from what
// CreateOnKubernetes recorded on it: the token label, the repository
// (owner/name) and the clone origin. Without them no token is minted.
func podTokenTarget(sb kube.Sandbox, w podTokenWriter) (tokendaemon.Target, error) {
	refuse := func(msg, hint string) error {
		return &errdefs.ContainerError{Op: "token daemon", Container: sb.Name, Reason: errdefs.ErrRefused, Msg: msg, Hint: hint}
	}
	if sb.Labels[launchplan.LabelGitHubToken] != "true" {
		return tokendaemon.Target{}, refuse("the Pod carries no GitHub token kept by the token daemon (no "+launchplan.LabelGitHubToken+"=true label): "+
			"only a Pod made by podbot create --repo OWNER/NAME with a GitHub App does; podbot run and podbot host keep their own Pod's token",
			"create the sandbox with podbot create --backend kubernetes --repo OWNER/NAME")
	}
	// Every podbot label is an annotation of the Pod; the repository and
	// origin are not valid label values.
	repo, err := workspace.ParseRepo(sb.Annotations[launchplan.LabelGitHubRepo])
	if err != nil {
		return tokendaemon.Target{}, refuse("the Pod names no repository (annotation "+launchplan.LabelGitHubRepo+
			"), and podbot mints no token with the installation's full grant", "create the sandbox again with this podbot")
	}
	origin, err := gitcred.ReadOriginString(sb.Annotations[launchplan.LabelGitHubOrigin])
	if err != nil {
		return tokendaemon.Target{}, refuse("the Pod names no clone origin (annotation "+launchplan.LabelGitHubOrigin+
			"), so git in it could not tell where the token may go", "create the sandbox again with this podbot")
	}
	store := &kubeTokenStore{kc: w, name: sb.Name, origin: origin.String(), live: true}
	return tokendaemon.Target{ID: sb.Name, Repositories: []string{repo.Name}, GitOrigin: origin, Store: store}, nil
}

// podServed reports whether the Pod name with uid still gets tokens: it
// runs and is not being deleted. A Pod gone, or replaced by another of the
// same name, does not. An API error is returned with true, so the caller
// keeps a token it cannot check.
func podServed(ctx context.Context, kc *kube.Client, name, uid string) (bool, error) {
	sb, err := kc.Get(ctx, name, false)
	switch {
	case err == nil:
		return sb.UID == uid && sb.Running() && !sb.Deleting, nil
	case errors.Is(err, errdefs.ErrNotFound):
		return false, nil
	default:
		return true, err
	}
}

// servedPods is what token-daemon --all knows of the Pods it serves: the
// uid each name had when it was first listed, so a daemon stops when its
// Pod is replaced by another of the same name (whose scope may differ),
// and the Pods already reported as unusable.
type servedPods struct {
	mu     sync.Mutex
	uids   map[string]string
	warned map[string]bool
}

// list returns the running, token-carrying Pods as targets, in one API call.
func (p *servedPods) list(ctx context.Context, kc *kube.Client, w podTokenWriter, logger *slog.Logger) ([]tokendaemon.Target, error) {
	pods, err := kc.List(ctx, kube.ListOptions{Labels: map[string]string{launchplan.LabelGitHubToken: "true"}})
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	targets := make([]tokendaemon.Target, 0, len(pods))
	for _, sb := range pods {
		if sb.Deleting {
			continue
		}
		t, err := podTokenTarget(sb, w)
		if err != nil {
			if !p.warned[sb.UID] {
				p.warned[sb.UID] = true
				logger.Warn("not keeping a token for this Pod", "pod", sb.Name, "err", err)
			}
			continue
		}
		if _, ok := p.uids[sb.Name]; !ok {
			p.uids[sb.Name] = sb.UID
		}
		targets = append(targets, t)
	}
	return targets, nil
}

// alive is the manager's Alive: podServed for the uid first listed; a Pod
// no longer served is forgotten, so the next listing takes its successor.
func (p *servedPods) alive(kc *kube.Client) func(context.Context, string) (bool, error) {
	return func(ctx context.Context, name string) (bool, error) {
		p.mu.Lock()
		uid := p.uids[name]
		p.mu.Unlock()
		ok, err := podServed(ctx, kc, name, uid)
		if !ok {
			p.mu.Lock()
			if p.uids[name] == uid {
				delete(p.uids, name)
			}
			p.mu.Unlock()
		}
		return ok, err
	}
}
