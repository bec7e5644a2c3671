package podbot

import (
	"context"
	"errors"
	"testing"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/tools"
)

func TestParseToolBackend(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"", ToolBackendContainer, true}, {"container", ToolBackendContainer, true},
		{"local", ToolBackendUnsafeLocal, true}, {"unsafe-local", ToolBackendUnsafeLocal, true},
		{"Unsafe", ToolBackendUnsafeLocal, true}, {"vm", "", false},
	}
	for _, tt := range tests {
		got, err := ParseToolBackend(tt.in)
		if got != tt.want || (err == nil) != tt.ok || (err != nil && !errors.Is(err, errdefs.ErrConfig)) {
			t.Errorf("ParseToolBackend(%q) = %q, %v", tt.in, got, err)
		}
	}
}

func TestToolSpecsPerBackend(t *testing.T) {
	if n := len(ToolSpecs(ToolBackendContainer)); n != len(tools.Specs())+1 {
		t.Errorf("container backend offers %d tools, want the %d common ones plus podman_shell", n, len(tools.Specs()))
	}
	if n := len(ToolSpecs(ToolBackendUnsafeLocal)); n != len(tools.Specs()) {
		t.Errorf("unsafe local backend offers %d tools", n)
	}
}

func TestNewToolSessionLocal(t *testing.T) {
	s, err := NewToolSession(context.Background(), nil, ToolSessionOptions{Config: config.Default(), Backend: "local", WorkspaceRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if _, err := s.Call(context.Background(), tools.LsTool, nil); err != nil {
		t.Fatal(err)
	}
}

func TestNewToolSessionContainerNeedsSidecar(t *testing.T) {
	_, err := NewToolSession(context.Background(), nil, ToolSessionOptions{Config: config.Default(), WorkspaceRoot: t.TempDir()})
	if err == nil {
		t.Fatal("a container session without an engine or sidecar was opened")
	}
}

func TestNewToolSessionRefersKubernetesToNewKubeToolSession(t *testing.T) {
	cfg := config.Default()
	cfg.Sandbox.Backend = config.BackendKubernetes
	_, err := NewToolSession(context.Background(), nil, ToolSessionOptions{Config: cfg})
	if !errors.Is(err, errdefs.ErrUnsupported) {
		t.Fatalf("container backend on kubernetes: %v, want ErrUnsupported", err)
	}
	s, err := NewToolSession(context.Background(), nil, ToolSessionOptions{Config: cfg, Backend: ToolBackendUnsafeLocal, WorkspaceRoot: t.TempDir()})
	if err != nil {
		t.Fatalf("the unsafe local backend needs no cluster: %v", err)
	}
	s.Close(context.Background())
}
