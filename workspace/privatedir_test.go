package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

// fallbackDir is where PrivateTempDir("podbot-cache") lands under tmp.
func fallbackDir(tmp string) string {
	return filepath.Join(tmp, "podbot-cache-"+strconv.Itoa(os.Getuid()))
}

func TestPrivateTempDirCreatesPrivateDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir, err := PrivateTempDir("podbot-cache")
	if err != nil {
		t.Fatal(err)
	}
	if dir != fallbackDir(tmp) {
		t.Fatalf("dir = %s, want %s", dir, fallbackDir(tmp))
	}
	info, err := os.Lstat(dir)
	if err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
		t.Fatalf("made %v (%v), want a 0700 directory", info.Mode(), err)
	}
	// A second call accepts the directory it made.
	if _, err := PrivateTempDir("podbot-cache"); err != nil {
		t.Fatal(err)
	}
}

// TestPrivateTempDirRefusesPlantedDir plays another local user who made
// the fallback cache directory first.
func TestPrivateTempDirRefusesPlantedDir(t *testing.T) {
	cases := map[string]func(t *testing.T, dir string){
		"symlink": func(t *testing.T, dir string) {
			target := t.TempDir()
			if err := os.Symlink(target, dir); err != nil {
				t.Fatal(err)
			}
		},
		"world-writable": func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		},
		"group-writable": func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o770); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o770); err != nil {
				t.Fatal(err)
			}
		},
		"file": func(t *testing.T, dir string) {
			if err := os.WriteFile(dir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"foreign owner": func(t *testing.T, dir string) {
			if os.Getuid() != 0 {
				t.Skip("making a directory owned by another user needs root")
			}
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			plant(t, fallbackDir(tmp))
			dir, err := PrivateTempDir("podbot-cache")
			if err == nil {
				t.Fatalf("PrivateTempDir accepted a planted directory: %s", dir)
			}
			var fe *errdefs.FilesystemError
			if !errors.As(err, &fe) || !errors.Is(err, errdefs.ErrRefused) || fe.Path != fallbackDir(tmp) {
				t.Fatalf("err = %v, want a refusal naming %s", err, fallbackDir(tmp))
			}
		})
	}
}
