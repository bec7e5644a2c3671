package localclone

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenOneRevParse checks the single rev-parse Open asks first gives
// the same answer as asking step by step, from the top, from a
// subdirectory and on a branch, and that a path inside the git directory
// still gets the step-by-step refusal.
func TestOpenOneRevParse(t *testing.T) {
	ctx := context.Background()
	g := testGit(t)
	host := hostRepo(t)
	sub := filepath.Join(host, "sub")
	os.Mkdir(sub, 0o755)
	for _, p := range []string{host, sub} {
		r, ok := openFast(ctx, g, p)
		if !ok {
			t.Fatalf("%s: one rev-parse did not answer", p)
		}
		want := Repo{Top: host, CommonDir: filepath.Join(host, ".git"), ObjectsDir: filepath.Join(host, ".git", "objects"),
			Branch: "refs/heads/main", ObjectFormat: "sha1"}
		if r != want {
			t.Errorf("%s: %+v, want %+v", p, r, want)
		}
	}
	if _, ok := openFast(ctx, g, filepath.Join(host, ".git")); ok {
		t.Error("the git directory was taken as a work tree")
	}
	if _, err := Open(ctx, g, filepath.Join(host, ".git")); err == nil || !strings.Contains(err.Error(), "inside a git directory") {
		t.Errorf("git directory: err = %v", err)
	}
}
