package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pathFixture makes two PATH directories, the second holding an
// executable named tool.
func pathFixture(t *testing.T) (first, second, tool string) {
	t.Helper()
	first, second = t.TempDir(), t.TempDir()
	tool = filepath.Join(second, "tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", first+string(os.PathListSeparator)+second)
	return first, second, tool
}

func TestPathCacheRemembersReadOnlyHits(t *testing.T) {
	_, _, tool := pathFixture(t)
	var checked []string
	c := pathCache{readOnly: func(dir string) bool { checked = append(checked, dir); return true }}
	for range 2 {
		got, err := c.lookPath("tool")
		if err != nil || got != tool {
			t.Fatalf("lookPath = %q, %v; want %q", got, err, tool)
		}
	}
	// Read-only means it cannot go away; the stand-in fs lets it, which
	// shows the second answer came from the cache.
	if err := os.Remove(tool); err != nil {
		t.Fatal(err)
	}
	if got, err := c.lookPath("tool"); err != nil || got != tool {
		t.Fatalf("cached lookPath = %q, %v; want %q", got, err, tool)
	}
	seen := map[string]int{}
	for _, d := range checked {
		seen[d]++
	}
	for d, n := range seen {
		if n > 1 {
			t.Errorf("mount of %s checked %d times, want once", d, n)
		}
	}
	if seen["/"] != 1 {
		t.Errorf("ancestors not checked: %v", checked)
	}
}

func TestPathCacheNeverRemembersWritable(t *testing.T) {
	first, second, tool := pathFixture(t)
	for _, writable := range []string{first, second, filepath.Dir(second)} {
		c := pathCache{readOnly: func(dir string) bool { return dir != writable }}
		if got, err := c.lookPath("tool"); err != nil || got != tool {
			t.Fatalf("lookPath = %q, %v", got, err)
		}
		// A command that appears earlier in PATH wins at once.
		shadow := filepath.Join(first, "tool")
		if err := os.WriteFile(shadow, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if got, err := c.lookPath("tool"); err != nil || got != shadow {
			t.Errorf("writable %s: lookPath = %q, %v; want the new %q", writable, got, err, shadow)
		}
		os.Remove(shadow)
	}
}

func TestPathCacheFollowsPATHAndMisses(t *testing.T) {
	_, second, tool := pathFixture(t)
	c := pathCache{readOnly: func(string) bool { return true }}
	if _, err := c.lookPath("tool"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.lookPath("no-such-tool"); err == nil {
		t.Fatal("a missing command resolved")
	}
	// A new PATH drops what the old one resolved.
	t.Setenv("PATH", t.TempDir())
	if got, err := c.lookPath("tool"); err == nil {
		t.Fatalf("lookPath under a new PATH = %q, want not found", got)
	}
	// A relative entry is never trusted.
	t.Setenv("PATH", "."+string(os.PathListSeparator)+second)
	if got, err := c.lookPath("tool"); err != nil || got != tool {
		t.Fatalf("lookPath = %q, %v", got, err)
	}
	if len(c.hits) != 0 {
		t.Errorf("cached %v behind a relative PATH entry", c.hits)
	}
}

func TestMountReadOnly(t *testing.T) {
	if mountReadOnly(t.TempDir()) {
		t.Error("a fresh temporary directory reported read-only")
	}
	if mountReadOnly(filepath.Join(t.TempDir(), strings.Repeat("x", 8))) {
		t.Error("a missing directory reported read-only")
	}
}
