package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

// layout builds: root/ (allowed) with proj/, link-in -> proj, link-out ->
// outside/, and outside/ next to it; plus a symlinked allowed root.
func layout(t *testing.T) (base, root string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(base, "root")
	for _, d := range []string{"root/proj/sub", "outside", "root/file-parent"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"root/link-in":     filepath.Join(root, "proj"),
		"root/link-out":    filepath.Join(base, "outside"),
		"root/link-rel":    "../outside",
		"root/proj/escape": "../../outside",
		"root-link":        root,
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(base, name)); err != nil {
			t.Fatal(err)
		}
	}
	return base, root
}

func TestResolveHostMount(t *testing.T) {
	base, root := layout(t)
	tests := []struct {
		name       string
		host       string
		target     string
		roots      []string
		wantSource string
		wantKey    string
		wantReason error
		wantFS     bool
	}{
		{name: "inside root", host: filepath.Join(root, "proj"), target: "/workspace", roots: []string{root},
			wantSource: filepath.Join(root, "proj")},
		{name: "the root itself", host: root, target: "/workspace", roots: []string{root}, wantSource: root},
		{name: "nested dir", host: filepath.Join(root, "proj/sub"), target: "/workspace/p", roots: []string{root},
			wantSource: filepath.Join(root, "proj/sub")},
		{name: "symlink staying inside", host: filepath.Join(root, "link-in"), target: "/workspace", roots: []string{root},
			wantSource: filepath.Join(root, "proj")},
		{name: "root given through a symlink", host: filepath.Join(base, "root-link/proj"), target: "/workspace", roots: []string{filepath.Join(base, "root-link")},
			wantSource: filepath.Join(root, "proj")},
		{name: "missing root skipped, other root matches", host: filepath.Join(root, "proj"), target: "/workspace",
			roots: []string{filepath.Join(base, "nope"), root}, wantSource: filepath.Join(root, "proj")},
		{name: "outside root", host: filepath.Join(base, "outside"), target: "/workspace", roots: []string{root},
			wantKey: "workspace.host_path", wantReason: errdefs.ErrRefused},
		{name: "prefix sibling is outside", host: filepath.Join(base, "outside"), target: "/workspace", roots: []string{filepath.Join(base, "out")},
			wantKey: "workspace.host_path", wantReason: errdefs.ErrRefused},
		{name: "absolute symlink escape", host: filepath.Join(root, "link-out"), target: "/workspace", roots: []string{root},
			wantKey: "workspace.host_path", wantReason: errdefs.ErrRefused},
		{name: "relative symlink escape", host: filepath.Join(root, "link-rel"), target: "/workspace", roots: []string{root},
			wantKey: "workspace.host_path", wantReason: errdefs.ErrRefused},
		{name: "nested symlink escape", host: filepath.Join(root, "proj/escape"), target: "/workspace", roots: []string{root},
			wantKey: "workspace.host_path", wantReason: errdefs.ErrRefused},
		{name: "dot-dot trick", host: root + "/proj/../../outside", target: "/workspace", roots: []string{root},
			wantKey: "workspace.host_path", wantReason: errdefs.ErrRefused},
		{name: "dot-dot staying inside", host: root + "/proj/../proj", target: "/workspace", roots: []string{root},
			wantKey: "workspace.host_path", wantReason: errdefs.ErrRefused},
		{name: "relative host path", host: "root/proj", target: "/workspace", roots: []string{root},
			wantKey: "workspace.host_path", wantReason: errdefs.ErrInvalidValue},
		{name: "empty host path", host: "", target: "/workspace", roots: []string{root},
			wantKey: "workspace.host_path", wantReason: errdefs.ErrMissingRequired},
		{name: "filesystem root", host: "/", target: "/workspace", roots: []string{"/"},
			wantKey: "workspace.host_path", wantReason: errdefs.ErrRefused},
		{name: "a file", host: filepath.Join(root, "file"), target: "/workspace", roots: []string{root},
			wantKey: "workspace.host_path", wantReason: errdefs.ErrInvalidValue},
		{name: "missing host path", host: filepath.Join(root, "missing"), target: "/workspace", roots: []string{root},
			wantFS: true, wantReason: errdefs.ErrNotFound},
		{name: "container path /", host: filepath.Join(root, "proj"), target: "/", roots: []string{root},
			wantKey: "workspace.container_path", wantReason: errdefs.ErrRefused},
		{name: "container path //", host: filepath.Join(root, "proj"), target: "//", roots: []string{root},
			wantKey: "workspace.container_path", wantReason: errdefs.ErrRefused},
		{name: "container path relative", host: filepath.Join(root, "proj"), target: "workspace", roots: []string{root},
			wantKey: "workspace.container_path", wantReason: errdefs.ErrInvalidValue},
		{name: "container path with dot-dot", host: filepath.Join(root, "proj"), target: "/workspace/../etc", roots: []string{root},
			wantKey: "workspace.container_path", wantReason: errdefs.ErrInvalidValue},
		{name: "container path empty", host: filepath.Join(root, "proj"), target: "", roots: []string{root},
			wantKey: "workspace.container_path", wantReason: errdefs.ErrMissingRequired},
		{name: "no roots", host: filepath.Join(root, "proj"), target: "/workspace",
			wantKey: "workspace.allowed_roots", wantReason: errdefs.ErrMissingRequired},
		{name: "relative root", host: filepath.Join(root, "proj"), target: "/workspace", roots: []string{"root"},
			wantKey: "workspace.allowed_roots", wantReason: errdefs.ErrInvalidValue},
		{name: "all roots missing", host: filepath.Join(root, "proj"), target: "/workspace", roots: []string{filepath.Join(base, "nope")},
			wantKey: "workspace.host_path", wantReason: errdefs.ErrRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ResolveHostMount(tt.host, tt.target, HostMountPolicy{AllowedRoots: tt.roots})
			switch {
			case tt.wantFS:
				var fe *errdefs.FilesystemError
				if !errors.As(err, &fe) || fe.Path != tt.host || !errors.Is(err, tt.wantReason) {
					t.Fatalf("error = %v, want FilesystemError for %s", err, tt.host)
				}
			case tt.wantKey != "":
				var ce *errdefs.ConfigError
				if !errors.As(err, &ce) || ce.Key != tt.wantKey || !errors.Is(err, tt.wantReason) {
					t.Fatalf("error = %v, want ConfigError %s %v", err, tt.wantKey, tt.wantReason)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if m.Source != tt.wantSource || m.Target != tt.target {
					t.Fatalf("mount = %+v, want %s -> %s", m, tt.wantSource, tt.target)
				}
			}
		})
	}
}

func TestResolveHostMountNamesSymlinkTarget(t *testing.T) {
	base, root := layout(t)
	_, err := ResolveHostMount(filepath.Join(root, "link-out"), "/workspace", HostMountPolicy{AllowedRoots: []string{root}})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(base, "outside")) || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("error should name the symlink's real target: %v", err)
	}
}

func TestMountHolds(t *testing.T) {
	base, root := layout(t)
	proj := filepath.Join(root, "proj")
	m := Mount{Source: proj, Target: "/workspace"}
	for name, target := range map[string]string{
		"outside/cfg-in":     filepath.Join(proj, "sub", "c.toml"),  // dangling, into the mount
		"outside/dir-in":     filepath.Join(proj, "sub"),            // a directory link into the mount
		"outside/chain":      filepath.Join(base, "outside/cfg-in"), // a link to a dangling link
		"outside/cfg-out":    filepath.Join(base, "outside", "real.toml"),
		"root/proj/link-out": filepath.Join(base, "outside"),
	} {
		if err := os.Symlink(target, filepath.Join(base, name)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		path   string
		inside bool
		want   string // resolved path, "" to skip
	}{
		{filepath.Join(proj, "sub"), true, filepath.Join(proj, "sub")},
		{proj, true, proj},
		{filepath.Join(proj, "new", "dir", "config.toml"), true, filepath.Join(proj, "new", "dir", "config.toml")},
		{filepath.Join(root, "link-in", "key.pem"), true, filepath.Join(proj, "key.pem")},
		{filepath.Join(base, "root-link", "proj", "x"), true, filepath.Join(proj, "x")},
		{filepath.Join(base, "outside", "cfg-in"), true, filepath.Join(proj, "sub", "c.toml")},
		{filepath.Join(base, "outside", "chain"), true, filepath.Join(proj, "sub", "c.toml")},
		{filepath.Join(base, "outside", "dir-in", "podbot", "config.toml"), true, filepath.Join(proj, "sub", "podbot", "config.toml")},
		{filepath.Join(base, "outside", "cfg-out"), false, filepath.Join(base, "outside", "real.toml")},
		{filepath.Join(proj, "link-out", "c.toml"), true, filepath.Join(base, "outside", "c.toml")}, // the sandbox can repoint link-out
		{filepath.Join(root, "proj2"), false, ""},
		{filepath.Join(root, "file"), false, ""},
		{"/", false, "/"},
	}
	for _, tc := range tests {
		got, inside, err := m.Holds(tc.path)
		if err != nil {
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		if inside != tc.inside || tc.want != "" && got != tc.want {
			t.Errorf("%s: resolved %s, inside %v; want %s, %v", tc.path, got, inside, tc.want, tc.inside)
		}
	}
	loop := filepath.Join(base, "outside", "loop")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Holds(filepath.Join(loop, "x")); err == nil {
		t.Error("a symlink loop was not reported")
	}
}
