//go:build kubernetes

package podbot

import (
	"context"
	"fmt"
	"strings"

	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
)

// KubePidsCheckName is the doctor check of the nodes' process limit.
const KubePidsCheckName = "kubernetes pids"

// DoctorKubePids reports the per-Pod process limit of the nodes sandboxes
// may land on (kube.Client.PodPidsLimits): the kubelet's podPidsLimit,
// since a Pod spec has no process limit and sandbox.pids_limit and
// tools.pids_limit are not applied on a cluster. OK when every node has
// one; WARN when a node has none, or when it cannot be read (a namespaced
// Role cannot read node configuration: that is no failure of podbot's).
func DoctorKubePids(ctx context.Context, kc *kube.Client) Check {
	c := Check{Name: KubePidsCheckName}
	fix := fmt.Sprintf("set podPidsLimit in the nodes' KubeletConfiguration (e.g. %d, launchplan's default for agent sandboxes)", launchplan.AgentPidsLimit)
	nodes, err := kc.PodPidsLimits(ctx)
	if err != nil {
		c.Status, c.Detail = CheckWarn, "cannot read the nodes' podPidsLimit: "+err.Error()
		c.Fix = "a Pod has no process limit of its own: make sure the nodes set podPidsLimit in their KubeletConfiguration"
		return c
	}
	if len(nodes) == 0 {
		c.Status, c.Detail = CheckWarn, "no node matches kubernetes.node_selector"
		c.Fix = "check kubernetes.node_selector"
		return c
	}
	var limited, unlimited, unknown []string
	for _, n := range nodes {
		switch {
		case n.Err != nil:
			unknown = append(unknown, n.Node+" ("+n.Err.Error()+")")
		case n.Limited():
			limited = append(limited, fmt.Sprintf("%s %d", n.Node, n.Limit))
		default:
			unlimited = append(unlimited, n.Node)
		}
	}
	var parts []string
	if len(limited) > 0 {
		parts = append(parts, "podPidsLimit per Pod: "+strings.Join(limited, ", "))
	}
	if len(unlimited) > 0 {
		parts = append(parts, "no podPidsLimit on "+strings.Join(unlimited, ", ")+": a fork bomb in a sandbox Pod is held only by the node's own limits")
	}
	if len(unknown) > 0 {
		parts = append(parts, "unknown on "+strings.Join(unknown, ", "))
	}
	c.Detail = strings.Join(parts, "; ") + " (a Pod has no process limit of its own: sandbox.pids_limit and tools.pids_limit do not apply on a cluster)"
	c.Status = CheckOK
	if len(unlimited) > 0 || len(unknown) > 0 {
		c.Status, c.Fix = CheckWarn, fix
	}
	return c
}
