package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cloneSources makes a workspace with sub/inner.txt and, beside it, a host
// directory "outside" holding a secret the clone must never contain.
func cloneSources(t *testing.T) (src, outside, dst string) {
	t.Helper()
	base := t.TempDir()
	src, outside, dst = filepath.Join(base, "ws"), filepath.Join(base, "outside"), filepath.Join(base, "clone")
	for _, d := range []string{filepath.Join(src, "sub"), outside, dst} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "sub", "inner.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("HOST SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return src, outside, dst
}

// assertNoOutside fails if any file of the clone holds the host secret.
func assertNoOutside(t *testing.T, dst string) {
	t.Helper()
	_ = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		data, _ := os.ReadFile(p)
		if strings.Contains(string(data), "HOST SECRET") || d.Name() == "secret.txt" {
			t.Errorf("the clone holds %s, copied from outside the workspace", p)
		}
		return nil
	})
}

// TestCopyTreeDirSwappedForSymlink plays an agent that replaces a
// directory of its workspace with a symlink to a host directory just after
// the copy looked at it and before the copy opens it.
func TestCopyTreeDirSwappedForSymlink(t *testing.T) {
	for _, target := range []string{"abs", "rel"} {
		t.Run(target, func(t *testing.T) {
			src, outside, dst := cloneSources(t)
			swapped := false
			hook := func(rel string) {
				if rel != "sub" || swapped {
					return
				}
				swapped = true
				if err := os.Rename(filepath.Join(src, "sub"), filepath.Join(src, "sub.real")); err != nil {
					t.Fatal(err)
				}
				link := outside
				if target == "rel" {
					link = filepath.Join("..", "outside")
				}
				if err := os.Symlink(link, filepath.Join(src, "sub")); err != nil {
					t.Fatal(err)
				}
			}
			_ = copyTreeHooked(src, dst, 1<<20, hook)
			if !swapped {
				t.Fatal("the copy never reached sub")
			}
			assertNoOutside(t, dst)
		})
	}
}

// TestCopyTreeFileSwappedForSymlink swaps a file for a symlink to a host
// file between the look and the open.
func TestCopyTreeFileSwappedForSymlink(t *testing.T) {
	src, outside, dst := cloneSources(t)
	hook := func(rel string) {
		if rel != "sub/inner.txt" {
			return
		}
		p := filepath.Join(src, "sub", "inner.txt")
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(outside, "secret.txt"), p); err != nil {
			t.Fatal(err)
		}
	}
	_ = copyTreeHooked(src, dst, 1<<20, hook)
	assertNoOutside(t, dst)
}

// TestCopyTreeCopies checks an undisturbed copy: files, modes, symlinks
// kept as links (never followed), nested directories.
func TestCopyTreeCopies(t *testing.T) {
	src, outside, dst := cloneSources(t)
	if err := os.Symlink(outside, filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyTree(src, dst, 1<<20); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dst, "sub", "inner.txt")); err != nil || string(data) != "mine\n" {
		t.Fatalf("sub/inner.txt = %q, %v", data, err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "link")); err != nil || l != outside {
		t.Fatalf("link = %q, %v", l, err)
	}
	if st, err := os.Stat(filepath.Join(dst, "run.sh")); err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Fatalf("run.sh lost its execute bit: %v %v", st, err)
	}
	assertNoOutside(t, dst)
	if err := copyTree(src, t.TempDir(), 3); err == nil {
		t.Fatal("copy over the byte budget succeeded")
	}
}
