package egressnet

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestLeftoversFindsOnlyPodbotsMarkedOldDirs(t *testing.T) {
	rt := t.TempDir()
	root, err := StateRoot(rt)
	if err != nil {
		t.Fatal(err)
	}
	const ep = "unix:///run/podman.sock"
	old := time.Now().Add(-time.Hour)
	mk := func(name, endpoint string, at time.Time) Dirs {
		t.Helper()
		d, err := DirsFor(rt, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Make(); err != nil {
			t.Fatal(err)
		}
		if endpoint != "" {
			if err := d.Mark(endpoint); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(filepath.Join(d.Root, MarkerFile), at, at); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	gone := mk("gone", ep, old)
	mk("other-engine", "unix:///run/docker.sock", old)
	mk("young", ep, time.Now())
	mk("unmarked", "", old)
	// A marked directory outside the root, reached through a symlink.
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.MkdirAll(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, MarkerFile), []byte(ep), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(filepath.Join(outside, MarkerFile), old, old)
	if err := os.Symlink(outside, filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	// A directory whose marker is a symlink to a file that names the engine.
	lm := mk("linked-marker", "", old)
	if err := os.Symlink(filepath.Join(outside, MarkerFile), filepath.Join(lm.Root, MarkerFile)); err != nil {
		t.Fatal(err)
	}
	// A plain file in the root.
	if err := os.WriteFile(filepath.Join(root, "file"), []byte(ep), 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		d := mk("someone-elses", ep, old)
		if err := os.Chown(d.Root, ProxyUser, ProxyUser); err != nil {
			t.Fatal(err)
		}
	}

	got, err := Leftovers(LeftoverOptions{Root: root, Endpoint: ep, Before: time.Now().Add(-time.Minute), Max: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != gone {
		t.Fatalf("Leftovers = %+v, want only %+v", got, gone)
	}
	if err := got[0].Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatalf("the symlinked directory outside the root was touched: %v", err)
	}
	var names []string
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if slices.Contains(names, "gone") || !slices.Contains(names, "young") || !slices.Contains(names, "linked") {
		t.Fatalf("root after removing the leftover: %v", names)
	}
	// No endpoint matches nothing.
	if got, _ := Leftovers(LeftoverOptions{Root: root, Before: time.Now(), Max: 100}); len(got) != 0 {
		t.Fatalf("an empty endpoint matched %+v", got)
	}
}

func TestLeftoversRootEdgeCases(t *testing.T) {
	dir := t.TempDir()
	// A missing root: nothing, no error.
	if got, err := Leftovers(LeftoverOptions{Root: filepath.Join(dir, "none"), Endpoint: "e", Before: time.Now(), Max: 10}); err != nil || got != nil {
		t.Fatalf("missing root: %v, %v", got, err)
	}
	// A root that is a symlink is not scanned.
	real := filepath.Join(dir, "real")
	d := dirsAt(real, "sb")
	if err := d.Make(); err != nil {
		t.Fatal(err)
	}
	if err := d.Mark("e"); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	_ = os.Chtimes(filepath.Join(d.Root, MarkerFile), past, past)
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if got, err := Leftovers(LeftoverOptions{Root: filepath.Join(dir, "link"), Endpoint: "e", Before: time.Now(), Max: 10}); err != nil || got != nil {
		t.Fatalf("symlinked root: %v, %v", got, err)
	}
	if got, err := Leftovers(LeftoverOptions{Root: real, Endpoint: "e", Before: time.Now(), Max: 10}); err != nil || len(got) != 1 {
		t.Fatalf("real root: %v, %v", got, err)
	}
	// Max bounds the scan.
	for _, n := range []string{"a", "b", "c"} {
		x := dirsAt(real, n)
		if err := x.Make(); err != nil {
			t.Fatal(err)
		}
		_ = x.Mark("e")
		_ = os.Chtimes(filepath.Join(x.Root, MarkerFile), past, past)
	}
	if got, _ := Leftovers(LeftoverOptions{Root: real, Endpoint: "e", Before: time.Now(), Max: 2}); len(got) > 2 {
		t.Fatalf("Max 2 gave %d", len(got))
	}
	// Mark writes the endpoint, mode 0600.
	fi, err := os.Stat(filepath.Join(d.Root, MarkerFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("marker: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(d.Root, MarkerFile)); string(b) != "e" {
		t.Fatalf("marker holds %q", b)
	}
}
