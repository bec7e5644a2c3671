//go:build kubernetes

package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/github"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/pool"
)

// kubernetesBuild reports that this binary carries the kubernetes backend
// (built with -tags kubernetes: the companion podbot-kube). It serves the
// backend itself and never hands a command over.
const kubernetesBuild = true

// kubeState is the factory's kubernetes connection, made once.
type kubeState struct {
	client *kube.Client
}

// kubeClient loads the kubeconfig of the [kubernetes] section once.
func (f *factory) kubeClient() (*kube.Client, error) {
	if f.kube.client != nil {
		return f.kube.client, nil
	}
	loaded, err := f.config(nil)
	if err != nil {
		return nil, err
	}
	k := loaded.Config.Kubernetes
	tolerations := make([]config.Toleration, 0, len(k.Tolerations))
	for _, s := range k.Tolerations {
		t, err := config.ParseToleration(s)
		if err != nil {
			return nil, &errdefs.ConfigError{Key: "kubernetes.tolerations", Reason: errdefs.ErrInvalidValue, Msg: err.Error()}
		}
		tolerations = append(tolerations, t)
	}
	c, err := kube.Connect(kube.Options{
		Kubeconfig: k.Kubeconfig, KubeconfigEnv: f.getenv("KUBECONFIG"), Context: k.Context, Namespace: k.Namespace,
		RuntimeClass: k.RuntimeClass, NodeSelector: k.NodeSelector, ImagePullPolicy: k.ImagePullPolicy,
		ServiceAccount: k.ServiceAccount, Tolerations: tolerations,
	})
	if err != nil {
		return nil, err
	}
	f.logger.Debug("kubernetes backend", "server", c.Server(), "namespace", c.Namespace())
	f.kube.client = c
	return c, nil
}

// createOnKubernetes is podbot create on the kubernetes backend.
func createOnKubernetes(ctx context.Context, f *factory, opts *createOptions, cfg config.Config) error {
	// The sidecar runs an allowlist sandbox's egress proxy Pod.
	sidecar, _ := f.findSidecar()
	lib, err := opts.toLibrary(cfg, sidecar)
	if err != nil {
		return err
	}
	lib.Environ, lib.Redactor, lib.LocalClone = f.environ, f.redactor, opts.localClone
	if opts.githubRepo != "" {
		lib.GitHubRepo = opts.githubRepo
		if g := cfg.GitHub; g.Configured() {
			app, err := github.NewApp(podbot.GitHubAppConfig(g))
			if err != nil {
				return err
			}
			lib.TokenSource = app
		}
	}
	if opts.pool != "" {
		spec, err := f.poolSpec(opts.pool)
		if err != nil {
			return err
		}
		lib.Pool, lib.PoolWait = &spec, opts.wait
	}
	kc, err := f.kubeClient()
	if err != nil {
		return err
	}
	res, err := podbot.CreateOnKubernetes(ctx, kc, lib)
	if err != nil {
		return err
	}
	if res.Claim != nil {
		logClaim(f, *res.Claim)
	}
	if lib.GitHubRepo != "" {
		f.logger.Info("GitHub token written into the Pod; it is not refreshed unless podbot token-daemon runs",
			"pod", res.Name, "repo", lib.GitHubRepo, "refresh", "podbot --backend kubernetes token-daemon "+res.Name)
	}
	_, err = fmt.Fprintln(f.ios.Out, res.Name)
	return err
}

// runOnKubernetes is podbot run on the kubernetes backend.
func runOnKubernetes(ctx context.Context, f *factory, opts podbot.RunOptions) (podbot.RunResult, error) {
	kc, err := f.kubeClient()
	if err != nil {
		return podbot.RunResult{}, err
	}
	return podbot.RunOnKubernetes(ctx, kc, opts)
}

// hostOnKubernetes is podbot host on the kubernetes backend.
func hostOnKubernetes(ctx context.Context, f *factory, opts podbot.HostOptions) (int, error) {
	kc, err := f.kubeClient()
	if err != nil {
		return 0, err
	}
	return podbot.HostOnKubernetes(ctx, kc, opts)
}

// psOnKubernetes lists podbot's sandbox Pods as ps rows.
func psOnKubernetes(ctx context.Context, f *factory, opts *psOptions) ([]podbot.Container, error) {
	kc, err := f.kubeClient()
	if err != nil {
		return nil, err
	}
	pods, err := kc.List(ctx, kube.ListOptions{All: opts.all})
	if err != nil {
		return nil, err
	}
	rows := make([]podbot.Container, 0, len(pods))
	for _, p := range pods {
		rows = append(rows, podbot.KubeContainer(p))
	}
	return rows, nil
}

// rmOnKubernetes is podbot rm on the kubernetes backend: each Pod and its
// NetworkPolicy is deleted, and its name printed; a local clone's base
// ref on the host is dropped, as on the engine.
func rmOnKubernetes(ctx context.Context, f *factory, opts *rmOptions) error {
	kc, err := f.kubeClient()
	if err != nil {
		return err
	}
	var errs []error
	for _, ref := range opts.refs {
		sb, err := kc.Remove(ctx, ref, kube.RemoveOptions{Force: opts.force, Any: opts.any})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c := podbot.KubeContainer(sb)
		podbot.ForgetLocalClone(ctx, c, f.environ)
		fmt.Fprintln(f.ios.Out, c.Name)
	}
	return errors.Join(errs...)
}

// logsOnKubernetes is podbot logs on the kubernetes backend.
func logsOnKubernetes(ctx context.Context, f *factory, opts *logsOptions) error {
	kc, err := f.kubeClient()
	if err != nil {
		return err
	}
	return kc.Logs(ctx, opts.ref, kube.LogsOptions{Follow: opts.follow, Tail: int64(opts.tail), Any: opts.any}, f.ios.Out)
}

// openKubeReview opens sandbox Pod ref for podbot diff, log, fetch and
// apply (podbot.OpenKubeReview).
func openKubeReview(ctx context.Context, f *factory, ref, repo string) (*podbot.Review, error) {
	kc, err := f.kubeClient()
	if err != nil {
		return nil, err
	}
	return podbot.OpenKubeReview(ctx, kc, ref, repo, f.environ)
}

// openKubeToolSession opens a container tool session whose sandbox is a
// Pod (podbot.NewKubeToolSession).
func openKubeToolSession(ctx context.Context, f *factory, opts podbot.ToolSessionOptions) (podbot.ToolSession, error) {
	kc, err := f.kubeClient()
	if err != nil {
		return nil, err
	}
	return podbot.NewKubeToolSession(ctx, kc, opts)
}

// kubePoolBackend is the cluster's pool backend (podbot pool, create --pool).
func (f *factory) kubePoolBackend(cfg config.Config) (pool.Backend, error) {
	kc, err := f.kubeClient()
	if err != nil {
		return nil, err
	}
	return podbot.NewKubePoolBackend(kc, podbot.PoolOptions{Config: cfg, Environ: f.environ, Logger: f.logger}), nil
}

// pruneOnKubernetes is podbot prune on the kubernetes backend: podbot's
// leftovers in the namespace (podbot.PruneOnKubernetes), printed as the
// engine's prune prints them.
func pruneOnKubernetes(ctx context.Context, f *factory, opts *pruneOptions) error {
	kc, err := f.kubeClient()
	if err != nil {
		return err
	}
	res, err := podbot.PruneOnKubernetes(ctx, kc, podbot.PruneOptions{DryRun: opts.dryRun})
	if perr := printPrune(f, opts, res); err == nil {
		err = perr
	}
	return err
}

// kubeDoctorChecks are doctor's checks of the cluster when
// sandbox.backend is kubernetes: the nodes' per-Pod process limit.
func (f *factory) kubeDoctorChecks(ctx context.Context, backend string) []podbot.Check {
	if backend != config.BackendKubernetes {
		return nil
	}
	kc, err := f.kubeClient()
	if err != nil {
		return []podbot.Check{{Name: podbot.KubePidsCheckName, Status: podbot.CheckWarn,
			Detail: "cannot connect to the cluster: " + err.Error(), Fix: "check kubernetes.kubeconfig and kubernetes.context"}}
	}
	return []podbot.Check{podbot.DoctorKubePids(ctx, kc)}
}

// tokenDaemonOnKubernetes is podbot token-daemon on the kubernetes
// backend: lib, made from the flags and the GitHub App, serves the Pods
// (podbot.RunTokenDaemonOnKubernetes).
func tokenDaemonOnKubernetes(ctx context.Context, f *factory, _ *tokenDaemonOptions, lib podbot.TokenDaemonOptions) error {
	kc, err := f.kubeClient()
	if err != nil {
		return err
	}
	return podbot.RunTokenDaemonOnKubernetes(ctx, kc, lib)
}
