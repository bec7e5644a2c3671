package tokendaemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestTokenDir(t *testing.T) {
	tests := []struct {
		runtime, id string
		wantErr     error
	}{
		{"/run/user/1000", "0123abcdef", nil},
		{"/run/user/1000", "podbot-agent_1.x", nil},
		{"", "abc", errdefs.ErrConfig},
		{"relative/dir", "abc", errdefs.ErrConfig},
		{"/run/user/1000", "", errdefs.ErrRefused},
		{"/run/user/1000", "..", errdefs.ErrRefused},
		{"/run/user/1000", ".hidden", errdefs.ErrRefused},
		{"/run/user/1000", "a/b", errdefs.ErrRefused},
		{"/run/user/1000", "-flag", errdefs.ErrRefused},
		{"/run/user/1000", "a b", errdefs.ErrRefused},
		{"/run/user/1000", strings.Repeat("a", 129), errdefs.ErrRefused},
	}
	for _, tt := range tests {
		got, err := TokenDir(tt.runtime, tt.id)
		if tt.wantErr == nil {
			if err != nil || got != filepath.Join(tt.runtime, "podbot", tt.id) {
				t.Errorf("TokenDir(%q, %q) = %q, %v", tt.runtime, tt.id, got, err)
			}
			continue
		}
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("TokenDir(%q, %q) = %q, %v; want %v", tt.runtime, tt.id, got, err, tt.wantErr)
		}
	}
}

func TestEnsurePrivateDir(t *testing.T) {
	base := t.TempDir()
	loose := filepath.Join(base, "loose")
	if err := os.Mkdir(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ensurePrivateDir(loose); err != nil || perm(t, loose) != 0o700 {
		t.Errorf("existing 0755 dir: err %v, mode %v; want tightened to 0700", err, perm(t, loose))
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(loose, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, file} {
		var fe *errdefs.FilesystemError
		if err := ensurePrivateDir(p); !errors.As(err, &fe) || fe.Path != p {
			t.Errorf("ensurePrivateDir(%s) = %v, want a filesystem error naming it", p, err)
		}
	}
	if err := ensurePrivateDir(filepath.Join(base, "missing", "child")); !errors.Is(err, errdefs.ErrFilesystem) {
		t.Errorf("missing parent = %v", err)
	}
}

func TestWriteTokenFile(t *testing.T) {
	dir := t.TempDir()
	if err := writeTokenFile(dir, "ghs_first"); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(filepath.Join(dir, TokenFileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := writeTokenFile(dir, "ghs_second"); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(filepath.Join(dir, TokenFileName))
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(before, after) {
		t.Error("the token file was rewritten in place, not replaced by rename")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, TokenFileName)); string(b) != "ghs_second" || after.Mode().Perm() != 0o600 {
		t.Errorf("file = %q mode %v", b, after.Mode().Perm())
	}
	for _, bad := range []string{"", "a b", "tok\n", "tok\x00", strings.Repeat("x", maxTokenLen+1)} {
		if err := writeTokenFile(dir, bad); !errors.Is(err, errdefs.ErrGitHub) {
			t.Errorf("writeTokenFile(%q) = %v, want refusal", bad, err)
		}
	}
	if err := writeTokenFile(filepath.Join(dir, "nope"), "ghs_x"); !errors.Is(err, errdefs.ErrFilesystem) {
		t.Errorf("missing dir = %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}
