package creds

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

type entry struct {
	typ     byte
	mode    int64
	link    string
	content string
	uid     int
}

func readTar(t *testing.T, a *Archive) ([]string, map[string]entry) {
	t.Helper()
	tr := tar.NewReader(a.Reader())
	var order []string
	got := map[string]entry{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading archive: %v", err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, hdr.Name)
		got[hdr.Name] = entry{typ: hdr.Typeflag, mode: hdr.Mode, link: hdr.Linkname, content: string(body), uid: hdr.Uid}
	}
	return order, got
}

func mkfile(t *testing.T, p, content string, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // not subject to umask
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// fixtureHome lays out a home with both credential families.
func fixtureHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	outside := t.TempDir()
	mkfile(t, filepath.Join(outside, "secret-elsewhere"), "do not copy", 0o600)
	c := filepath.Join(home, ".claude")
	mkfile(t, filepath.Join(c, "settings.json"), `{"a":1}`, 0o644)
	mkfile(t, filepath.Join(c, ".credentials.json"), "claude-cred", 0o600)
	mkfile(t, filepath.Join(c, "bin", "hook.sh"), "#!/bin/sh\n", 0o755)
	mkfile(t, filepath.Join(c, "projects", "p", "session.jsonl"), "transcript", 0o644)
	mkfile(t, filepath.Join(c, "debug.log"), "log", 0o644)
	mkfile(t, filepath.Join(c, "plugins", "cache", "x"), "cached", 0o644)
	if err := os.Chmod(filepath.Join(c, "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	symlink(t, "settings.json", filepath.Join(c, "link-inside"))
	symlink(t, filepath.Join(outside, "secret-elsewhere"), filepath.Join(c, "link-outside"))
	symlink(t, outside, filepath.Join(c, "dir-link-outside"))
	symlink(t, "does-not-exist", filepath.Join(c, "dangling"))
	if err := syscall.Mkfifo(filepath.Join(c, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	x := filepath.Join(home, ".codex")
	mkfile(t, filepath.Join(x, "auth.json"), "codex-cred", 0o600)
	mkfile(t, filepath.Join(x, "config.toml"), "model = 'x'\n", 0o640)
	mkfile(t, filepath.Join(x, "sessions", "2030", "s.jsonl"), "transcript", 0o644)
	return home
}

func TestBuildContents(t *testing.T) {
	home := fixtureHome(t)
	a, err := Build(context.Background(), BuildOptions{HostHome: home, CopyClaude: true, CopyCodex: true, UID: 1000, GID: 1000})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if want := []string{"/root/.claude", "/root/.codex"}; !slices.Equal(a.Paths, want) {
		t.Errorf("Paths = %v, want %v", a.Paths, want)
	}
	if a.TargetHome != "/root" {
		t.Errorf("TargetHome = %q", a.TargetHome)
	}
	order, got := readTar(t, a)
	want := map[string]entry{
		".claude/":                  {typ: tar.TypeDir, mode: 0o755},
		".claude/settings.json":     {typ: tar.TypeReg, mode: 0o644, content: `{"a":1}`},
		".claude/.credentials.json": {typ: tar.TypeReg, mode: 0o600, content: "claude-cred"},
		".claude/bin/":              {typ: tar.TypeDir, mode: 0o700},
		".claude/bin/hook.sh":       {typ: tar.TypeReg, mode: 0o755, content: "#!/bin/sh\n"},
		".claude/plugins/":          {typ: tar.TypeDir, mode: 0o755},
		".claude/link-inside":       {typ: tar.TypeSymlink, mode: 0o777, link: "settings.json"},
		".claude/dangling":          {typ: tar.TypeSymlink, mode: 0o777, link: "does-not-exist"},
		".codex/":                   {typ: tar.TypeDir, mode: 0o755},
		".codex/auth.json":          {typ: tar.TypeReg, mode: 0o600, content: "codex-cred"},
		".codex/config.toml":        {typ: tar.TypeReg, mode: 0o640, content: "model = 'x'\n"},
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("archive lacks %s", name)
			continue
		}
		if g.typ != w.typ || g.mode != w.mode || g.link != w.link || g.content != w.content || g.uid != 1000 {
			t.Errorf("%s = %+v, want %+v (uid 1000)", name, g, w)
		}
	}
	// Links that point outside are stored as links, never followed.
	for _, name := range []string{".claude/link-outside", ".claude/dir-link-outside"} {
		if g := got[name]; g.typ != tar.TypeSymlink || !filepath.IsAbs(g.link) || g.content != "" {
			t.Errorf("%s = %+v, want an absolute symlink with no content", name, g)
		}
	}
	for name, g := range got {
		if strings.Contains(g.content, "do not copy") {
			t.Errorf("%s carries content from outside the copied directory", name)
		}
		if strings.HasPrefix(name, ".claude/dir-link-outside/") {
			t.Errorf("symlinked directory was followed: %s", name)
		}
	}
	// Default excludes: transcripts, logs and caches stay home.
	for _, name := range []string{".claude/projects/", ".claude/projects/p/session.jsonl", ".claude/debug.log",
		".claude/plugins/cache/", ".claude/plugins/cache/x", ".codex/sessions/", ".codex/sessions/2030/s.jsonl", ".claude/fifo"} {
		if _, ok := got[name]; ok {
			t.Errorf("archive holds excluded or special entry %s", name)
		}
	}
	if len(a.Skipped) != 1 || filepath.Base(a.Skipped[0]) != "fifo" {
		t.Errorf("Skipped = %v, want the fifo", a.Skipped)
	}
	// Fixed order: every .claude entry before every .codex entry.
	lastClaude, firstCodex := -1, len(order)
	for i, n := range order {
		if strings.HasPrefix(n, ".claude/") {
			lastClaude = i
		} else if strings.HasPrefix(n, ".codex/") && i < firstCodex {
			firstCodex = i
		}
	}
	if lastClaude > firstCodex || order[0] != ".claude/" {
		t.Errorf("entries out of order: %v", order)
	}
}

func TestBuildSelection(t *testing.T) {
	home := fixtureHome(t)
	empty := t.TempDir()
	onlyCodex := t.TempDir()
	mkfile(t, filepath.Join(onlyCodex, ".codex", "auth.json"), "x", 0o600)
	tests := []struct {
		name          string
		home          string
		claude, codex bool
		wantPaths     []string // nil means no archive at all
	}{
		{"nothing selected", home, false, false, nil},
		{"claude only", home, true, false, []string{"/root/.claude"}},
		{"codex only", home, false, true, []string{"/root/.codex"}},
		{"selected but missing", empty, true, true, nil},
		{"one missing one present", onlyCodex, true, true, []string{"/root/.codex"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Build(context.Background(), BuildOptions{HostHome: tt.home, CopyClaude: tt.claude, CopyCodex: tt.codex})
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if tt.wantPaths == nil {
				if a != nil {
					t.Fatalf("Build = %+v, want no archive", a.Paths)
				}
				return
			}
			if a == nil || !slices.Equal(a.Paths, tt.wantPaths) {
				t.Fatalf("Build paths = %v, want %v", a, tt.wantPaths)
			}
			_, got := readTar(t, a)
			for name := range got {
				ok := false
				for _, p := range tt.wantPaths {
					if strings.HasPrefix("/root/"+name, p+"/") {
						ok = true
					}
				}
				if !ok {
					t.Errorf("entry %s belongs to an unselected family", name)
				}
			}
		})
	}
}

func TestBuildNotADirectory(t *testing.T) {
	home := t.TempDir()
	mkfile(t, filepath.Join(home, ".claude"), "oops", 0o644)
	_, err := Build(context.Background(), BuildOptions{HostHome: home, CopyClaude: true})
	var fe *errdefs.FilesystemError
	if !errors.As(err, &fe) || fe.Path != filepath.Join(home, ".claude") || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Build with a file as .claude = %v, want a filesystem error naming it", err)
	}
	// Unselected, the same file is irrelevant.
	if a, err := Build(context.Background(), BuildOptions{HostHome: home, CopyCodex: true}); err != nil || a != nil {
		t.Fatalf("Build = %v, %v; want nothing", a, err)
	}
}

func TestBuildSymlinkedFamilyRoot(t *testing.T) {
	home, real := t.TempDir(), t.TempDir()
	mkfile(t, filepath.Join(real, "auth.json"), "cred", 0o600)
	symlink(t, real, filepath.Join(home, ".codex"))
	a, err := Build(context.Background(), BuildOptions{HostHome: home, CopyCodex: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, got := readTar(t, a); got[".codex/auth.json"].content != "cred" {
		t.Fatalf("symlinked family root not copied: %v", got)
	}
}

func TestBuildExcludeOptions(t *testing.T) {
	home := fixtureHome(t)
	a, err := Build(context.Background(), BuildOptions{HostHome: home, CopyClaude: true, Exclude: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, got := readTar(t, a); got[".claude/projects/p/session.jsonl"].content != "transcript" {
		t.Error("an empty exclude list must copy everything")
	}
	a, err = Build(context.Background(), BuildOptions{HostHome: home, CopyClaude: true, Exclude: []string{"*.json", ".claude/bin/"}})
	if err != nil {
		t.Fatal(err)
	}
	_, got := readTar(t, a)
	for _, gone := range []string{".claude/settings.json", ".claude/.credentials.json", ".claude/bin/", ".claude/bin/hook.sh"} {
		if _, ok := got[gone]; ok {
			t.Errorf("%s should be excluded", gone)
		}
	}
	if _, ok := got[".claude/projects/p/session.jsonl"]; !ok {
		t.Error("custom excludes replace the defaults")
	}
	if a, err := Build(context.Background(), BuildOptions{HostHome: home, CopyClaude: true, Exclude: []string{".claude"}}); err != nil || a != nil {
		t.Errorf("excluding the whole family = %v, %v; want no archive", a, err)
	}
	_, err = Build(context.Background(), BuildOptions{HostHome: home, CopyClaude: true, Exclude: []string{"[unclosed"}})
	var ce *errdefs.ConfigError
	if !errors.As(err, &ce) || ce.Key != "creds.exclude" || !strings.Contains(err.Error(), "[unclosed") {
		t.Errorf("bad pattern = %v, want a creds.exclude config error naming it", err)
	}
}

func TestBuildLimitsAndTarget(t *testing.T) {
	home := fixtureHome(t)
	_, err := Build(context.Background(), BuildOptions{HostHome: home, CopyClaude: true, MaxBytes: 600})
	if !errors.Is(err, errdefs.ErrFilesystem) || !strings.Contains(err.Error(), "600-byte limit") {
		t.Errorf("Build over the limit = %v", err)
	}
	a, err := Build(context.Background(), BuildOptions{HostHome: home, CopyCodex: true, TargetHome: "/home/agent/"})
	if err != nil || a.TargetHome != "/home/agent" || a.Paths[0] != "/home/agent/.codex" {
		t.Errorf("custom target = %+v, %v", a, err)
	}
	for _, bad := range []string{"relative", "/", "/home/../etc", "//x"} {
		if _, err := Build(context.Background(), BuildOptions{HostHome: home, CopyCodex: true, TargetHome: bad}); !errors.Is(err, errdefs.ErrConfig) {
			t.Errorf("TargetHome %q = %v, want a config error", bad, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, BuildOptions{HostHome: home, CopyCodex: true}); !errors.Is(err, context.Canceled) {
		t.Errorf("Build with a canceled context = %v", err)
	}
}

func TestBuildReadFailure(t *testing.T) {
	home := fixtureHome(t)
	failing := func(p string) (*os.File, error) {
		if filepath.Base(p) == "auth.json" {
			return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrPermission}
		}
		return os.Open(p)
	}
	_, err := build(context.Background(), BuildOptions{HostHome: home, CopyCodex: true}, failing)
	var fe *errdefs.FilesystemError
	if !errors.As(err, &fe) || fe.Path != filepath.Join(home, ".codex", "auth.json") || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("read failure = %v, want a filesystem error naming auth.json", err)
	}
	if os.Geteuid() != 0 {
		p := filepath.Join(home, ".codex", "config.toml")
		if err := os.Chmod(p, 0); err != nil {
			t.Fatal(err)
		}
		_, err := Build(context.Background(), BuildOptions{HostHome: home, CopyCodex: true})
		if !errors.As(err, &fe) || fe.Path != p {
			t.Fatalf("unreadable file = %v, want a filesystem error naming %s", err, p)
		}
	}
}

func TestArchiveIsDeterministic(t *testing.T) {
	home := fixtureHome(t)
	a, err := Build(context.Background(), BuildOptions{HostHome: home, CopyClaude: true, CopyCodex: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(context.Background(), BuildOptions{HostHome: home, CopyClaude: true, CopyCodex: true})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Tar, b.Tar) {
		t.Error("two builds of the same tree differ")
	}
}

// TestBuildGitConfig: the git identity rides in the credentials archive,
// alone (no credentials selected, no host home needed) or beside them,
// owned by the agent's user.
func TestBuildGitConfig(t *testing.T) {
	gc := GitConfigFile("Ada Lovelace", "ada@example.invalid")
	a, err := Build(context.Background(), BuildOptions{GitConfig: gc, TargetHome: "/home/podbot", UID: 1234, GID: 1234})
	if err != nil || a == nil {
		t.Fatalf("Build = %v, %v; want an archive with the identity alone", a, err)
	}
	order, got := readTar(t, a)
	if len(order) != 1 || a.GitConfig != "/home/podbot/.gitconfig" || len(a.Paths) != 0 {
		t.Fatalf("archive %v, GitConfig %q, Paths %v", order, a.GitConfig, a.Paths)
	}
	if e := got[".gitconfig"]; e.typ != tar.TypeReg || e.mode != 0o644 || e.uid != 1234 || e.content != string(gc) {
		t.Errorf(".gitconfig entry = %+v", e)
	}

	a, err = Build(context.Background(), BuildOptions{HostHome: fixtureHome(t), CopyClaude: true, GitConfig: gc})
	if err != nil || a == nil {
		t.Fatal(err)
	}
	order, _ = readTar(t, a)
	if !slices.Contains(order, ".gitconfig") || !slices.Equal(a.Paths, []string{"/root/.claude"}) || a.GitConfig != "/root/.gitconfig" {
		t.Errorf("archive %v, Paths %v, GitConfig %q", order, a.Paths, a.GitConfig)
	}
	if a, err := Build(context.Background(), BuildOptions{}); a != nil || err != nil {
		t.Errorf("Build of nothing = %v, %v; want no archive", a, err)
	}
}
