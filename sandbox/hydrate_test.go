package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestHydrate(t *testing.T) {
	allowed := t.TempDir()
	src := filepath.Join(allowed, "proj")
	writeTree(t, src, map[string]string{"a.py": "print(1)", "b.txt": "b", "sub/c.py": "c", "node_modules/x.py": "x"})
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret": "s"})
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		mount   HostMount
		roots   []string
		want    []string
		missing []string
		reason  error
	}{
		{name: "copies a tree", mount: HostMount{HostPath: src}, roots: []string{allowed},
			want: []string{"proj/a.py", "proj/sub/c.py", "proj/b.txt"}, missing: []string{"proj/link"}},
		{name: "include and exclude", mount: HostMount{HostPath: src, MountPath: "code", IncludeGlob: []string{"*.py"}, ExcludeGlob: []string{"node_modules"}},
			roots: []string{allowed}, want: []string{"code/a.py", "code/sub/c.py"}, missing: []string{"code/b.txt", "code/node_modules/x.py"}},
		{name: "single file", mount: HostMount{HostPath: filepath.Join(src, "b.txt"), MountPath: "x/b.txt"}, roots: []string{allowed}, want: []string{"x/b.txt"}},
		{name: "no allowed roots", mount: HostMount{HostPath: src}, reason: errdefs.ErrMissingRequired},
		{name: "outside the roots", mount: HostMount{HostPath: outside}, roots: []string{allowed}, reason: errdefs.ErrRefused},
		{name: "byte budget", mount: HostMount{HostPath: src, MaxBytes: 3}, roots: []string{allowed}, reason: errdefs.ErrInvalidValue},
		{name: "followed symlink leaving the roots", mount: HostMount{HostPath: src, FollowSymlinks: true}, roots: []string{allowed}, reason: errdefs.ErrRefused},
		{name: "mount path escaping", mount: HostMount{HostPath: src, MountPath: "../up"}, roots: []string{allowed}, reason: errdefs.ErrInvalidValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			err := hydrate(ws, []HostMount{tt.mount}, tt.roots)
			if tt.reason != nil {
				if !errors.Is(err, tt.reason) {
					t.Fatalf("err = %v, want reason %v", err, tt.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tt.want {
				if _, err := os.Stat(filepath.Join(ws, p)); err != nil {
					t.Errorf("%s not copied: %v", p, err)
				}
			}
			for _, p := range tt.missing {
				if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
					t.Errorf("%s copied, want skipped", p)
				}
			}
		})
	}
}

func TestHydrateSkipsWhatIsPresent(t *testing.T) {
	allowed := t.TempDir()
	writeTree(t, allowed, map[string]string{"p/a.txt": "host"})
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{"p/a.txt": "edited"})
	if err := hydrate(ws, []HostMount{{HostPath: filepath.Join(allowed, "p")}}, []string{allowed}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "p/a.txt")); string(b) != "edited" {
		t.Fatalf("hydration overwrote the workspace: %q", b)
	}
}
