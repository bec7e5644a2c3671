//go:build kubernetes

package podbot

import (
	"context"

	"github.com/podbot/podbot/kube"
)

// PruneOnKubernetes is Prune on the kubernetes backend (kube.Client.Prune):
// in the client's namespace it removes podbot's sandbox Pods that ended,
// cannot start, or are pool members left half-made (as Containers, with
// their NetworkPolicy, Secret and egress proxy), the egress proxies of
// sandboxes that are gone (Egress) and the NetworkPolicies and Secrets
// whose Pod is gone (Orphans), each only when its labels say podbot made
// it and, but for an ended Pod, once it is older than the engine's grace
// for a container in state created. Running sandboxes and ready pool
// members are never touched. The result has the engine's shape; images,
// egress directories and pool directories are the engine's alone.
func PruneOnKubernetes(ctx context.Context, kc *kube.Client, opts PruneOptions) (PruneResult, error) {
	res := PruneResult{DryRun: opts.DryRun, Containers: []Container{}, Images: []PrunedImage{}, Egress: []string{}, TokenDirs: []string{},
		EgressDirs: []string{}, PoolDirs: []string{}, Orphans: []PrunedObject{}}
	kr, err := kc.Prune(ctx, kube.PruneOptions{DryRun: opts.DryRun, Grace: createdGrace})
	for _, sb := range kr.Pods {
		res.Containers = append(res.Containers, KubeContainer(sb))
	}
	res.Egress = append(res.Egress, kr.Egress...)
	for _, o := range kr.Orphans {
		res.Orphans = append(res.Orphans, PrunedObject{Kind: o.Kind, Name: o.Name})
	}
	return res, err
}
