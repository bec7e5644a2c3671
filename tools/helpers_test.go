package tools

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func newTestWorkspace(t *testing.T) *Workspace {
	t.Helper()
	ws, err := NewWorkspace(t.TempDir(), WithTempDir(t.TempDir()))
	if err != nil {
		t.Fatalf("NewWorkspace: %v", err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	return ws
}

func writeHostFile(t *testing.T, ws *Workspace, rel, content string) {
	t.Helper()
	p := filepath.Join(ws.Dir(), filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readHostFile(t *testing.T, ws *Workspace, rel string) (string, bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ws.Dir(), filepath.FromSlash(rel)))
	if errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(data), true
}

// wantToolError checks err is a ToolError with the given reason (nil: any).
func wantToolError(t *testing.T, err error, reason error) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want a tool error")
	}
	if !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("error %v (%T) is not a ToolError", err, err)
	}
	if reason != nil && !errors.Is(err, reason) {
		t.Fatalf("error %q does not match reason %v", err, reason)
	}
}

var (
	reasonInvalid  = errdefs.ErrInvalidValue
	reasonRefused  = errdefs.ErrRefused
	reasonNotFound = errdefs.ErrNotFound
)
