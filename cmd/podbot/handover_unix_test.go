//go:build unix

package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestFindCompanionChecks(t *testing.T) {
	self := func(p string) func() (string, error) { return func() (string, error) { return p, nil } }
	write := func(t *testing.T, p string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("found next to the resolved executable", func(t *testing.T) {
		dir, link := t.TempDir(), t.TempDir()
		write(t, filepath.Join(dir, "podbot"), 0o755)
		write(t, filepath.Join(dir, companionName), 0o755)
		// A symlink to podbot elsewhere (and a stray podbot-kube beside the
		// link) must not move the search.
		if err := os.Symlink(filepath.Join(dir, "podbot"), filepath.Join(link, "podbot")); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(link, companionName), 0o777)
		got, err := findCompanion(self(filepath.Join(link, "podbot")))
		if want := filepath.Join(dir, companionName); err != nil || got != want {
			t.Errorf("got %q, %v; want %q", got, err, want)
		}
	})

	t.Run("a symlinked companion is checked where it points", func(t *testing.T) {
		dir, target := t.TempDir(), t.TempDir()
		write(t, filepath.Join(dir, "podbot"), 0o755)
		write(t, filepath.Join(target, "real"), 0o755)
		if err := os.Symlink(filepath.Join(target, "real"), filepath.Join(dir, companionName)); err != nil {
			t.Fatal(err)
		}
		if got, err := findCompanion(self(filepath.Join(dir, "podbot"))); err != nil || got != filepath.Join(target, "real") {
			t.Errorf("got %q, %v", got, err)
		}
		if err := os.Chmod(target, 0o777); err != nil {
			t.Fatal(err)
		}
		if _, err := findCompanion(self(filepath.Join(dir, "podbot"))); !errors.Is(err, errdefs.ErrRefused) {
			t.Errorf("target in a world-writable directory: %v", err)
		}
	})

	refused := []struct {
		name   string
		setup  func(t *testing.T, dir string)
		reason error
	}{
		{"missing", func(t *testing.T, dir string) {}, errdefs.ErrNotFound},
		{"group-writable", func(t *testing.T, dir string) { write(t, filepath.Join(dir, companionName), 0o775) }, errdefs.ErrRefused},
		{"world-writable", func(t *testing.T, dir string) { write(t, filepath.Join(dir, companionName), 0o757) }, errdefs.ErrRefused},
		{"not executable", func(t *testing.T, dir string) { write(t, filepath.Join(dir, companionName), 0o644) }, errdefs.ErrRefused},
		{"a directory", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, companionName), 0o755); err != nil {
				t.Fatal(err)
			}
		}, errdefs.ErrRefused},
		{"writable directory", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, companionName), 0o755)
			if err := os.Chmod(dir, 0o775); err != nil {
				t.Fatal(err)
			}
		}, errdefs.ErrRefused},
		{"podbot itself, hard-linked", func(t *testing.T, dir string) {
			if err := os.Link(filepath.Join(dir, "podbot"), filepath.Join(dir, companionName)); err != nil {
				t.Fatal(err)
			}
		}, errdefs.ErrRefused},
		{"podbot itself, symlinked", func(t *testing.T, dir string) {
			if err := os.Symlink("podbot", filepath.Join(dir, companionName)); err != nil {
				t.Fatal(err)
			}
		}, errdefs.ErrRefused},
		{"owned by someone else", func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				t.Skip("chown needs root")
			}
			p := filepath.Join(dir, companionName)
			write(t, p, 0o755)
			if err := os.Chown(p, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}, errdefs.ErrRefused},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "podbot"), 0o755)
			tc.setup(t, dir)
			got, err := findCompanion(self(filepath.Join(dir, "podbot")))
			var fsErr *errdefs.FilesystemError
			if !errors.Is(err, tc.reason) || !errors.As(err, &fsErr) || got != "" {
				t.Errorf("got %q, %v; want a filesystem error with %v", got, err, tc.reason)
			}
		})
	}

	t.Run("running as podbot-kube finds itself", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, companionName), 0o755)
		if _, err := findCompanion(self(filepath.Join(dir, companionName))); !errors.Is(err, errdefs.ErrRefused) {
			t.Errorf("a lean build named %s: %v", companionName, err)
		}
	})
}
