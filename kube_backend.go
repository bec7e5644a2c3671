//go:build kubernetes

package podbot

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
)

// CreateOnKubernetes is Create on the kubernetes backend: the same launch
// request, normalized into the same plan, run as a hardened Pod with a
// NetworkPolicy of its own (see package kube). The sandbox's main process
// is opts.Command, or launchplan.DefaultInitCommand: the podbot-sidecar
// binary is on the host and a Pod gets no host path. network.mode =
// "allowlist" runs the sandbox's egress proxy in a Pod of its own, from
// opts.SidecarPath (see package kube). What the backend cannot honour (the
// privileged profile, host mounts) is refused with an
// *errdefs.ConfigError. [[secrets]] go to the egress proxy Pod's vault
// Secret (see package kube, BuildVaultSecret); a github-app secret is
// refused, as no token is minted for create. A local_clone workspace (opts.LocalClone) is
// bundled on the host as on the engine and streamed into an emptyDir at
// its parent directory over a pods/exec stdin. An interrupted or failed Create
// leaves no Pod, NetworkPolicy or proxy behind.
// With opts.Pool it claims a ready Pod of that pool instead (see
// NewKubePoolBackend).
//
// With opts.GitHubRepo and opts.TokenSource the Pod gets a GitHub
// installation token as podbot run gives one (see kube_token.go): limited
// to that repository, written by exec into the Pod's token container, and
// read by git through podbot-sidecar (streamed in from opts.SidecarPath),
// which gives it to github.clone_base_url's origin alone. The Pod is
// labelled launchplan.LabelGitHubToken=true and records the repository
// and origin in its annotations (nothing secret), so podbot token-daemon
// (RunTokenDaemonOnKubernetes) can keep the token fresh; without it the
// token expires. Nothing is cloned.
//
// This file is built only with -tags kubernetes, so that a program using
// package podbot without the kubernetes backend does not link client-go.
func CreateOnKubernetes(ctx context.Context, kc *kube.Client, opts CreateOptions) (CreateResult, error) {
	if err := checkCreateToken(opts); err != nil {
		return CreateResult{}, err
	}
	if opts.Pool != nil {
		return claimOnKubernetes(ctx, kc, opts)
	}
	sidecarPath := opts.SidecarPath
	opts.SidecarPath = ""
	req, err := CreateRequest(engine.Endpoint{}, opts)
	if err != nil {
		return CreateResult{}, err
	}
	plan, err := launchplan.Normalize(req)
	if err != nil {
		return CreateResult{}, err
	}
	if err := kube.Supported(plan); err != nil {
		return CreateResult{}, err
	}
	if kc, err = kubeEgressClient(kc, plan, sidecarPath); err != nil {
		return CreateResult{}, err
	}
	vlt, err := createVault(&plan, opts)
	if err != nil {
		return CreateResult{}, &StepError{StepNetwork, err}
	}
	var ev *kube.EgressVault
	if vlt != nil {
		if ev, err = kubeEgressVault(vlt); err != nil {
			return CreateResult{}, &StepError{StepNetwork, err}
		}
	}
	var podOpts []kube.PodOption
	var lcs *localCloneSetup
	if opts.LocalClone != nil {
		base, err := localCloneScratch(plan)
		if err != nil {
			return CreateResult{}, err
		}
		podOpts = append(podOpts, kube.WithScratchDirs(base), kube.WithWorkingDir(base))
		if lcs, err = prepareLocalClone(ctx, opts.Environ, *opts.LocalClone, plan.Name, plan.WorkingDir); err != nil {
			return CreateResult{}, err
		}
		defer lcs.cleanup()
		for k, v := range lcs.info.Labels() {
			plan.Labels[k] = v
		}
	}
	var sb kube.Sandbox
	if opts.GitHubRepo != "" {
		sb, err = createWithToken(ctx, kc, opts, sidecarPath, &plan, podOpts, ev)
	} else {
		sb, err = kc.Launch(ctx, plan, kube.LaunchOptions{PodOptions: podOpts, Vault: ev})
	}
	if err != nil {
		return CreateResult{}, err
	}
	if lcs != nil {
		if err := lcs.copyIn(ctx, kubeCloneIO{kc: kc, name: sb.Name}); err != nil {
			return CreateResult{}, errors.Join(err, kc.Delete(ctx, sb.Name))
		}
	}
	return CreateResult{ID: sb.UID, Name: sb.Name, Plan: plan}, nil
}

// KubeContainer shows a sandbox Pod as podbot's operator commands show a
// container: State is the Pod's phase in lower case, Status the phase and
// age (and why it waits or ended), Labels every podbot label.
func KubeContainer(sb kube.Sandbox) Container {
	labels := make(map[string]string, len(sb.Annotations)+len(sb.Labels))
	for k, v := range sb.Annotations {
		if strings.HasPrefix(k, launchplan.LabelPrefix) {
			labels[k] = v
		}
	}
	for k, v := range sb.Labels {
		labels[k] = v
	}
	status := string(sb.Phase)
	if !sb.Created.IsZero() {
		status += " " + time.Since(sb.Created).Round(time.Second).String()
	}
	if sb.Reason != "" {
		status += " (" + sb.Reason + ")"
	}
	return Container{ID: sb.UID, Name: sb.Name, Image: sb.Image, State: strings.ToLower(string(sb.Phase)),
		Status: status, Created: sb.Created, Labels: labels}
}
