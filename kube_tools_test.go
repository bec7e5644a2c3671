//go:build kubernetes

package podbot

import (
	"context"
	"errors"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/podbot/podbot/config"
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
