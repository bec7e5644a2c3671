//go:build kubernetes

package podbot

import (
	"context"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/sandbox"
)

// kubeEgressClient returns the client that launches plan: kc itself, or,
// for an allowlist plan, kc with the host's podbot-sidecar (sidecarPath,
// read once) to run the sandbox's egress proxy Pod from (see package
// kube, EgressName). An allowlist plan without a sidecar is refused.
func kubeEgressClient(kc *kube.Client, plan launchplan.Plan, sidecarPath string) (*kube.Client, error) {
	if plan.Egress.Mode != egress.ModeAllowlist {
		return kc, nil
	}
	if sidecarPath == "" {
		return nil, &errdefs.ConfigError{Key: "network.mode", Reason: errdefs.ErrMissingRequired,
			Msg: "network.mode = \"allowlist\" runs the egress proxy from podbot-sidecar, streamed into a Pod; install podbot-sidecar next to podbot, set PODBOT_SIDECAR_PATH, or use --network none or open"}
	}
	path, err := sandbox.CanonicalSidecar(sidecarPath)
	if err != nil {
		return nil, err
	}
	sc, err := kube.LoadSidecar(path)
	if err != nil {
		return nil, err
	}
	return kc.WithSidecar(sc), nil
}

// withEgress gives b the client that launches plan (kubeEgressClient).
func (b *kubeBackend) withEgress(plan launchplan.Plan) error {
	kc, err := kubeEgressClient(b.kc, plan, b.sidecarPath)
	if err != nil {
		return err
	}
	b.kc = kc
	return nil
}

// kubeNetworkPolicy shows a cluster sandbox's proxy as NetworkShow shows
// an engine sandbox's: PolicyFile names the ConfigMap, Secrets come from
// the sandbox Pod's vault index annotation (names, hosts and variables;
// never a value or a placeholder).
func kubeNetworkPolicy(ctx context.Context, kc *kube.Client, sandbox string, ep kube.EgressProxy) NetworkPolicy {
	np := NetworkPolicy{Sandbox: sandbox, Mode: string(egress.ModeAllowlist), Proxy: ep.Addr,
		PolicyFile: "configmap/" + ep.Name + ":" + egressnet.PolicyFile, Policy: ep.Policy}
	if sb, err := kc.Get(ctx, sandbox, false); err == nil {
		np.Secrets = vaultIndex(KubeContainer(sb).Labels)
	}
	return np
}

// NetworkShowOnKubernetes is NetworkShow for a sandbox Pod: the policy in
// its egress proxy's ConfigMap and its vault's secrets by name.
func NetworkShowOnKubernetes(ctx context.Context, kc *kube.Client, ref string) (NetworkPolicy, error) {
	ep, err := kc.EgressPolicy(ctx, ref)
	if err != nil {
		return NetworkPolicy{}, err
	}
	return kubeNetworkPolicy(ctx, kc, ref, ep), nil
}

// NetworkAllowOnKubernetes is NetworkAllow for a sandbox Pod: the rule is
// written to its proxy's ConfigMap, which the kubelet brings into the
// proxy Pod within its sync period (about a minute by default); the proxy
// then reloads it without a restart.
func NetworkAllowOnKubernetes(ctx context.Context, kc *kube.Client, ref, rule string) (NetworkPolicy, error) {
	return changeKubePolicy(ctx, kc, ref, rule, func(p *egress.Policy, r egress.Rule) {
		p.Deny = without(p.Deny, r)
		p.Rules = append(without(p.Rules, r), r)
	})
}

// NetworkDenyOnKubernetes is NetworkDeny for a sandbox Pod, delivered as
// NetworkAllowOnKubernetes delivers a rule.
func NetworkDenyOnKubernetes(ctx context.Context, kc *kube.Client, ref, rule string) (NetworkPolicy, error) {
	return changeKubePolicy(ctx, kc, ref, rule, func(p *egress.Policy, r egress.Rule) {
		p.Deny = append(without(p.Deny, r), r)
	})
}

func changeKubePolicy(ctx context.Context, kc *kube.Client, ref, rule string, change func(*egress.Policy, egress.Rule)) (NetworkPolicy, error) {
	r, err := egress.ParseRule(rule)
	if err != nil {
		return NetworkPolicy{}, &errdefs.ConfigError{Key: "HOST", Reason: errdefs.ErrInvalidValue, Msg: err.Error(), Err: err}
	}
	r.Source = SourceLive
	ep, err := kc.ChangeEgressPolicy(ctx, ref, func(p *egress.Policy) { change(p, r) })
	if err != nil {
		return NetworkPolicy{}, err
	}
	return kubeNetworkPolicy(ctx, kc, ref, ep), nil
}

// NetworkLogOnKubernetes is NetworkLog for a sandbox Pod: the decision log
// is read in its proxy Pod over pods/exec.
func NetworkLogOnKubernetes(ctx context.Context, kc *kube.Client, ref string, opts NetworkLogOptions, fn func(line []byte) error) error {
	return kc.EgressLog(ctx, ref, opts.Follow, fn)
}

// kubeEgressVault is v in the form the cluster's proxy reads (package
// kube, EgressVault): the secrets file and the CA's certificate and key.
// It goes into the proxy's Secret and nowhere else.
func kubeEgressVault(v *vault) (*kube.EgressVault, error) {
	data, err := egress.MarshalSecrets(v.secrets)
	if err != nil {
		return nil, err
	}
	key, err := v.ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	return &kube.EgressVault{Secrets: data, CACert: v.ca.CertPEM(), CAKey: key}, nil
}

// carryVault keeps v for start, which gives it to the sandbox's egress
// proxy Pod (vaultCarrier).
func (b *kubeBackend) carryVault(v *vault) error {
	ev, err := kubeEgressVault(v)
	if err != nil {
		return err
	}
	b.vault = ev
	return nil
}
