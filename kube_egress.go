//go:build kubernetes

package podbot

import (
	"github.com/podbot/podbot/egress"
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
