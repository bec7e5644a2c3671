package podbot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
)

// TestLaunchRefusesTrustedFilesInWorkspace: a host-mount workspace that
// holds podbot's config file or the GitHub App key is refused, since the
// sandboxed agent could rewrite podbot's settings for its next launch (or
// read the key). Symlinks are resolved on both sides.
func TestLaunchRefusesTrustedFilesInWorkspace(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "src", "app")
	safe := filepath.Join(base, "safe")
	for _, d := range []string{ws, safe, filepath.Join(ws, ".config")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) string {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := func(target, name string) string {
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
		return name
	}
	inWS := write(filepath.Join(ws, "podbot.toml"))
	outside := write(filepath.Join(safe, "podbot.toml"))
	keyIn := write(filepath.Join(ws, "app.pem"))
	keyOut := write(filepath.Join(safe, "app.pem"))
	intoWS := link(inWS, filepath.Join(safe, "into-ws.toml"))                // outside, pointing in
	viaWSLink := link(outside, filepath.Join(ws, "podbot-link.toml"))        // in the workspace, pointing out
	wsLink := link(ws, filepath.Join(base, "ws-link"))                       // the workspace through a symlink
	keyLink := link(keyIn, filepath.Join(safe, "key-link.pem"))              // the key through a symlink
	notYet := filepath.Join(ws, ".config", "podbot", "config.toml")          // a default location, absent
	relative, err := filepath.Rel(mustGetwd(t), filepath.Join(ws, "x.toml")) // relative to the test's directory
	if err != nil {
		t.Fatal(err)
	}

	conn, err := engine.Connect(context.Background(), engine.Endpoint{Raw: "tcp://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tests := []struct {
		name     string
		hostPath string
		files    []string
		key      string
		wantKey  string // "" when the launch request must be made
		wantPath string
	}{
		{"config file outside", ws, []string{outside}, keyOut, "", ""},
		{"no host mount", "", []string{inWS}, keyIn, "", ""},
		{"config file inside", ws, []string{inWS}, "", "workspace.host_path", inWS},
		{"workspace named through a symlink", wsLink, []string{inWS}, "", "workspace.host_path", inWS},
		{"config file linked into the workspace", ws, []string{intoWS}, "", "workspace.host_path", intoWS},
		{"config link the sandbox can repoint", ws, []string{viaWSLink}, "", "workspace.host_path", viaWSLink},
		{"absent default location inside", ws, []string{filepath.Join(safe, "none.toml"), notYet}, "", "workspace.host_path", notYet},
		{"relative config path", ws, []string{relative}, "", "workspace.host_path", relative},
		{"private key inside", ws, []string{outside}, keyIn, "github.private_key_path", keyIn},
		{"private key linked into the workspace", ws, nil, keyLink, "github.private_key_path", keyLink},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Agent.Kind = config.KindCustom
			cfg.Agent.Command = "true"
			cfg.Workspace.AllowedRoots = []string{base}
			cfg.GitHub.PrivateKeyPath = tc.key
			_, _, err := launchRequest(conn, LaunchOptions{Config: cfg, HostPath: tc.hostPath, ConfigFiles: tc.files})
			if tc.wantKey == "" {
				if err != nil {
					t.Fatalf("launch request: %v", err)
				}
				return
			}
			var ce *errdefs.ConfigError
			if !errors.As(err, &ce) || ce.Key != tc.wantKey || !errors.Is(err, errdefs.ErrRefused) {
				t.Fatalf("err = %v, want a refused ConfigError for %s", err, tc.wantKey)
			}
			msg := err.Error()
			for _, want := range []string{tc.wantPath, ws, "/workspace", "outside the workspace"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the error does not name %q:\n%s", want, msg)
				}
			}
		})
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
