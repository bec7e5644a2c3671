package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestCacheDirPrefersXDGThenHome(t *testing.T) {
	ios, _, _ := testIO()
	f := newFactory(ios, []string{"XDG_CACHE_HOME=/x/cache", "HOME=/home/u"})
	if d, err := f.cacheDir(); err != nil || d != "/x/cache/podbot" {
		t.Fatalf("cacheDir = %q, %v", d, err)
	}
	f = newFactory(ios, []string{"HOME=/home/u"})
	if d, err := f.cacheDir(); err != nil || d != "/home/u/.cache/podbot" {
		t.Fatalf("cacheDir = %q, %v", d, err)
	}
}

// TestCacheDirFallbackIsPrivate plays a local user who made podbot's
// temporary cache directory before podbot did: the fallback is per user,
// and a planted one is refused instead of trusted.
func TestCacheDirFallbackIsPrivate(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	// The old shared name, made world-writable by someone else, is not used.
	shared := filepath.Join(tmp, "podbot-cache")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	ios, _, _ := testIO()
	f := newFactory(ios, nil)
	d, err := f.cacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if d == shared || !strings.HasSuffix(d, "-"+strconv.Itoa(os.Getuid())) {
		t.Fatalf("cacheDir = %s, want a per-user directory", d)
	}
	if info, err := os.Lstat(d); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("cache dir %s: %v %v, want mode 0700", d, info, err)
	}

	// The per-user name planted as a symlink is refused.
	tmp2 := t.TempDir()
	t.Setenv("TMPDIR", tmp2)
	planted := filepath.Join(tmp2, "podbot-cache-"+strconv.Itoa(os.Getuid()))
	if err := os.Symlink(t.TempDir(), planted); err != nil {
		t.Fatal(err)
	}
	if d, err := f.cacheDir(); !errors.Is(err, errdefs.ErrRefused) {
		t.Fatalf("cacheDir = %q, %v; want a refusal", d, err)
	}
}
