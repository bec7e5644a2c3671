//go:build kubernetes

package podbot

import (
	"context"
	"errors"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/pool"
	"github.com/podbot/podbot/sandbox"
)

func TestKubeToolPodServesTheEngineCommand(t *testing.T) {
	// The serve command the session sends names sandbox.SidecarTarget.
	if kube.SidecarPath != sandbox.SidecarTarget {
		t.Fatalf("the Pod installs the sidecar at %s, the session runs %s", kube.SidecarPath, sandbox.SidecarTarget)
	}
	cfg := config.Default()
	cfg.Tools.Image = "localhost/podbot-sandbox:latest"
	r := &kubeToolRuntime{opts: containerOptions(nil, ToolSessionOptions{Config: cfg}, sandbox.Options{})}
	plan, err := r.plan("0123456789abcdef", sandbox.ContainerName("0123456789abcdef", 1))
	if err != nil {
		t.Fatal(err)
	}
	pod, err := kube.BuildToolPod(plan, kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sc := pod.Spec.Containers[0]
	if pod.Labels[launchplan.LabelIntent] != string(launchplan.IntentTools) || *pod.Spec.SecurityContext.RunAsUser != 65534 ||
		!*sc.SecurityContext.ReadOnlyRootFilesystem || len(sc.SecurityContext.Capabilities.Add) != 0 || sc.Image != cfg.Tools.Image {
		t.Errorf("tool Pod %+v", pod.Spec)
	}
	if plan.Network != "none" || len(plan.Mounts) != 0 {
		t.Errorf("plan network %q mounts %v", plan.Network, plan.Mounts)
	}
	if mem := sc.Resources.Limits.Memory().Value(); mem != launchplan.ToolsMemoryBytes {
		t.Errorf("memory limit %d", mem)
	}
}

func TestNewKubeToolSessionRefusals(t *testing.T) {
	kc := kube.NewForClientset(fake.NewClientset(), "sb", kube.Options{})
	ctx := context.Background()
	if _, err := NewKubeToolSession(ctx, kc, ToolSessionOptions{Pool: &pool.Spec{Name: "p"}}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("pool: %v", err)
	}
	if _, err := NewKubeToolSession(ctx, nil, ToolSessionOptions{}); !errors.Is(err, errdefs.ErrMissingRequired) {
		t.Errorf("no client: %v", err)
	}
	if _, err := NewKubeToolSession(ctx, kc, ToolSessionOptions{SidecarPath: "/nonexistent/podbot-sidecar"}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("no sidecar: %v", err)
	}
}

// TestKubeToolPodAllowlist: tools.network = "allowlist" gives the tool
// Pod's plan the [network] section's allowlist policy (no agent preset),
// a network the Pod backend accepts, and a NetworkPolicy whose only
// egress is the proxy.
func TestKubeToolPodAllowlist(t *testing.T) {
	cfg := config.Default()
	cfg.Tools.Image = "localhost/podbot-sandbox:latest"
	cfg.Tools.Network = ToolsNetworkAllowlist
	cfg.Network.Mode = "none" // agent sandboxes' mode: not the tool session's
	cfg.Network.Allow = []string{"allowed.example"}
	cfg.Network.Presets = nil
	eg, err := toolsEgress(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts := containerOptions(nil, ToolSessionOptions{Config: cfg}, sandbox.Options{})
	opts.Network = "bridge"
	r := &kubeToolRuntime{opts: opts, egress: eg}
	plan, err := r.plan("0123456789abcdef", sandbox.ContainerName("0123456789abcdef", 1))
	if err != nil {
		t.Fatal(err)
	}
	if plan.Egress.Mode != "allowlist" || len(plan.Egress.Policy.Rules) != 1 || plan.Egress.Policy.Rules[0].Host != "allowed.example" {
		t.Errorf("egress %+v", plan.Egress)
	}
	if err := kube.Supported(plan); err != nil {
		t.Errorf("allowlist tool plan refused: %v", err)
	}
	pod, err := kube.BuildToolPod(plan, kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	np := kube.BuildNetworkPolicy(pod, plan.Egress.Mode)
	if len(np.Spec.Egress) != 1 || len(np.Spec.Egress[0].To) != 1 || np.Spec.Egress[0].To[0].PodSelector == nil ||
		np.Spec.Egress[0].To[0].PodSelector.MatchLabels[egressnet.LabelSandbox] != pod.Name {
		t.Errorf("network policy egress %+v", np.Spec.Egress)
	}
}

func TestToolsAllowlistRefusals(t *testing.T) {
	cfg := config.Default()
	cfg.Tools.Network = ToolsNetworkAllowlist
	cfg.Secrets = []config.Secret{{}}
	if _, err := toolsEgress(cfg); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("[[secrets]] with a tools allowlist: %v", err)
	}
	cfg.Secrets = nil
	cfg.Network.Allow = []string{"bad host!"}
	if _, err := toolsEgress(cfg); !errors.Is(err, errdefs.ErrConfig) {
		t.Errorf("a bad network.allow rule: %v", err)
	}
}
