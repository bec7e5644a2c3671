package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestSymlinkEscapesRefused(t *testing.T) {
	ws := newTestWorkspace(t)
	ctx := context.Background()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("host secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"etc": "/etc", "host": outside, "passwd": "/etc/passwd", "rel": "../../../../etc"} {
		if err := os.Symlink(target, filepath.Join(ws.Dir(), name)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		call func() error
	}{
		{"read /etc via dir link", func() error { _, err := ws.ReadFile(ctx, ReadFileParams{FilePath: "etc/passwd"}); return err }},
		{"read file link", func() error { _, err := ws.ReadFile(ctx, ReadFileParams{FilePath: "passwd"}); return err }},
		{"read host dir link", func() error { _, err := ws.ReadFile(ctx, ReadFileParams{FilePath: "host/secret"}); return err }},
		{"read relative link", func() error { _, err := ws.ReadFile(ctx, ReadFileParams{FilePath: "rel/hostname"}); return err }},
		{"ls through link", func() error { _, err := ws.Ls(ctx, LsParams{Path: "etc"}); return err }},
		{"write through link", func() error {
			_, err := ws.WriteFile(ctx, WriteFileParams{FilePath: "host/new", Content: "x"})
			return err
		}},
		{"edit through link", func() error {
			_, err := ws.EditFile(ctx, EditFileParams{FilePath: "host/secret", OldString: "host", NewString: "x"})
			return err
		}},
		{"rm through link", func() error { _, err := ws.Rm(ctx, RmParams{Path: "host/secret"}); return err }},
		{"grep through link", func() error { _, err := ws.Grep(ctx, GrepParams{Pattern: "root", Path: "etc/passwd"}); return err }},
		{"glob in link", func() error { _, err := ws.Glob(ctx, GlobParams{Pattern: "*", Path: "etc"}); return err }},
		{"cwd through link", func() error {
			_, err := ws.ShellExecute(ctx, ShellParams{Command: []string{"true"}, Cwd: "host"})
			return err
		}},
		{"python read through link", func() error {
			_, err := ws.EvaluatePython(ctx, EvalParams{Code: "pass", Reads: []string{"passwd"}})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantToolError(t, tt.call(), reasonRefused) })
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Fatalf("host file was touched: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Fatal("write escaped the workspace")
	}
	// Removing the link itself is fine and leaves the target alone.
	if _, err := ws.Rm(ctx, RmParams{Path: "host"}); err != nil {
		t.Fatalf("rm link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Fatalf("rm followed the link: %v", err)
	}
	// glob and grep from the root list links but never walk into them.
	g, err := ws.Grep(ctx, GrepParams{Pattern: "root"})
	if err != nil || len(g.Matches) != 0 {
		t.Fatalf("grep from root followed a link: %+v, %v", g, err)
	}
}

func TestReadFile(t *testing.T) {
	ws := newTestWorkspace(t)
	ctx := context.Background()
	var b strings.Builder
	for i := range 10 {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	writeHostFile(t, ws, "ten.txt", b.String())
	writeHostFile(t, ws, "noeol.txt", "a\nb")
	writeHostFile(t, ws, "long.txt", strings.Repeat("x", MaxLineChars+10)+"\nshort\n")
	writeHostFile(t, ws, "bin.dat", "ELF\x00\x01\x02")
	writeHostFile(t, ws, "latin1.txt", "caf\xe9 au lait\n")
	if err := os.Mkdir(filepath.Join(ws.Dir(), "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		p         ReadFileParams
		want      string
		total     int
		truncated bool
		reason    error
	}{
		{name: "whole", p: ReadFileParams{FilePath: "ten.txt"}, want: b.String()[:len(b.String())-1], total: 10},
		{name: "page", p: ReadFileParams{FilePath: "ten.txt", Offset: 2, Limit: 3}, want: "line 2\nline 3\nline 4", total: 10},
		{name: "past end", p: ReadFileParams{FilePath: "ten.txt", Offset: 50}, want: "", total: 10},
		{name: "no final newline", p: ReadFileParams{FilePath: "noeol.txt"}, want: "a\nb", total: 2},
		{name: "workspace prefix", p: ReadFileParams{FilePath: "/workspace/noeol.txt", Limit: 1}, want: "a", total: 2},
		{name: "long line cut", p: ReadFileParams{FilePath: "long.txt"}, want: strings.Repeat("x", MaxLineChars) + " " + TruncatedMarker + "\nshort", total: 2, truncated: true},
		{name: "binary", p: ReadFileParams{FilePath: "bin.dat"}, reason: errdefs.ErrUnsupported},
		{name: "not utf8", p: ReadFileParams{FilePath: "latin1.txt"}, reason: errdefs.ErrUnsupported},
		{name: "directory", p: ReadFileParams{FilePath: "dir"}, reason: reasonInvalid},
		{name: "missing", p: ReadFileParams{FilePath: "nope.txt"}, reason: reasonNotFound},
		{name: "negative offset", p: ReadFileParams{FilePath: "ten.txt", Offset: -1}, reason: reasonInvalid},
		{name: "absolute", p: ReadFileParams{FilePath: "/etc/passwd"}, reason: reasonRefused},
		{name: "dotdot", p: ReadFileParams{FilePath: "../../etc/passwd"}, reason: reasonRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ws.ReadFile(ctx, tt.p)
			if tt.reason != nil {
				wantToolError(t, err, tt.reason)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Content != tt.want || got.TotalLines != tt.total || got.Truncated != tt.truncated {
				t.Fatalf("got %q total %d truncated %v; want %q total %d truncated %v", got.Content, got.TotalLines, got.Truncated, tt.want, tt.total, tt.truncated)
			}
		})
	}
}

func TestWriteEditRm(t *testing.T) {
	ws := newTestWorkspace(t)
	ctx := context.Background()
	if _, err := ws.WriteFile(ctx, WriteFileParams{FilePath: "src/a.txt", Content: "one two two\n"}); err != nil {
		t.Fatalf("write: %v", err)
	}
	if got, _ := readHostFile(t, ws, "src/a.txt"); got != "one two two\n" {
		t.Fatalf("written %q", got)
	}
	errTests := []struct {
		name   string
		call   func() error
		reason error
	}{
		{"overwrite refused", func() error {
			_, err := ws.WriteFile(ctx, WriteFileParams{FilePath: "src/a.txt", Content: "x"})
			return err
		}, errdefs.ErrAlreadyExists},
		{"too long", func() error {
			_, err := ws.WriteFile(ctx, WriteFileParams{FilePath: "big.txt", Content: strings.Repeat("é", MaxWriteChars+1)})
			return err
		}, reasonInvalid},
		{"nul content", func() error {
			_, err := ws.WriteFile(ctx, WriteFileParams{FilePath: "nul.txt", Content: "a\x00b"})
			return err
		}, reasonInvalid},
		{"non-unique edit", func() error {
			_, err := ws.EditFile(ctx, EditFileParams{FilePath: "src/a.txt", OldString: "two", NewString: "2"})
			return err
		}, reasonInvalid},
		{"edit no match", func() error {
			_, err := ws.EditFile(ctx, EditFileParams{FilePath: "src/a.txt", OldString: "three", NewString: "3"})
			return err
		}, reasonNotFound},
		{"edit empty old", func() error {
			_, err := ws.EditFile(ctx, EditFileParams{FilePath: "src/a.txt", NewString: "3"})
			return err
		}, reasonInvalid},
		{"rm root", func() error { _, err := ws.Rm(ctx, RmParams{Path: "."}); return err }, reasonInvalid},
		{"rm missing", func() error { _, err := ws.Rm(ctx, RmParams{Path: "nope"}); return err }, reasonNotFound},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) { wantToolError(t, tt.call(), tt.reason) })
	}
	if got, _ := readHostFile(t, ws, "src/a.txt"); got != "one two two\n" {
		t.Fatalf("failed calls changed the file: %q", got)
	}
	res, err := ws.EditFile(ctx, EditFileParams{FilePath: "src/a.txt", OldString: "one", NewString: "1"})
	if err != nil || res.Replacements != 1 {
		t.Fatalf("edit once: %+v, %v", res, err)
	}
	res, err = ws.EditFile(ctx, EditFileParams{FilePath: "src/a.txt", OldString: "two", NewString: "2", ReplaceAll: true})
	if err != nil || res.Replacements != 2 {
		t.Fatalf("edit all: %+v, %v", res, err)
	}
	if got, _ := readHostFile(t, ws, "src/a.txt"); got != "1 2 2\n" {
		t.Fatalf("edited %q", got)
	}
	if entries, _ := os.ReadDir(filepath.Join(ws.Dir(), "src")); len(entries) != 1 {
		t.Fatalf("edit left temporary files: %v", entries)
	}
	if _, err := ws.Rm(ctx, RmParams{Path: "src"}); err != nil {
		t.Fatalf("rm dir: %v", err)
	}
	if _, ok := readHostFile(t, ws, "src/a.txt"); ok {
		t.Fatal("rm left the file")
	}
}

func TestLsGlobGrep(t *testing.T) {
	ws := newTestWorkspace(t)
	ctx := context.Background()
	writeHostFile(t, ws, "main.go", "package main\nfunc main() {}\n")
	writeHostFile(t, ws, "pkg/a.go", "package pkg\nfunc A() {}\n")
	writeHostFile(t, ws, "pkg/deep/b.go", "package deep\nfunc B() {}\n")
	writeHostFile(t, ws, "pkg/notes.md", "func in prose\n")
	writeHostFile(t, ws, "pkg/blob.bin", "func\x00\x00")

	ls, err := ws.Ls(ctx, LsParams{Path: "pkg"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ls.Entries {
		names = append(names, e.Name+":"+e.Type)
	}
	if got := strings.Join(names, ","); got != "a.go:file,blob.bin:file,deep:dir,notes.md:file" {
		t.Fatalf("ls = %s", got)
	}

	globTests := []struct {
		p    GlobParams
		want string
	}{
		{GlobParams{Pattern: "*.go"}, "main.go"},
		{GlobParams{Pattern: "**/*.go"}, "main.go,pkg/a.go,pkg/deep/b.go"},
		{GlobParams{Pattern: "*.go", Path: "pkg"}, "pkg/a.go"},
		{GlobParams{Pattern: "deep/*", Path: "pkg"}, "pkg/deep/b.go"},
	}
	for _, tt := range globTests {
		g, err := ws.Glob(ctx, tt.p)
		if err != nil {
			t.Fatalf("glob %+v: %v", tt.p, err)
		}
		if got := strings.Join(g.Matches, ","); got != tt.want {
			t.Errorf("glob %+v = %s, want %s", tt.p, got, tt.want)
		}
	}
	_, err = ws.Glob(ctx, GlobParams{Pattern: "[a-"})
	wantToolError(t, err, reasonInvalid)
	_, err = ws.Glob(ctx, GlobParams{Pattern: "../*"})
	wantToolError(t, err, reasonRefused)

	grepTests := []struct {
		p       GrepParams
		want    string
		skipped int
	}{
		{GrepParams{Pattern: `^func \w+\(`}, "main.go:2,pkg/a.go:2,pkg/deep/b.go:2", 1},
		{GrepParams{Pattern: "func", Glob: "*.md"}, "pkg/notes.md:1", 0},
		{GrepParams{Pattern: "func", Path: "pkg/a.go"}, "pkg/a.go:2", 0},
		{GrepParams{Pattern: "package", Path: "pkg", Glob: "deep/*.go"}, "pkg/deep/b.go:1", 0},
	}
	for _, tt := range grepTests {
		g, err := ws.Grep(ctx, tt.p)
		if err != nil {
			t.Fatalf("grep %+v: %v", tt.p, err)
		}
		var got []string
		for _, m := range g.Matches {
			got = append(got, fmt.Sprintf("%s:%d", m.Path, m.Line))
		}
		if strings.Join(got, ",") != tt.want || g.SkippedFiles != tt.skipped {
			t.Errorf("grep %+v = %v skipped %d, want %s skipped %d", tt.p, got, g.SkippedFiles, tt.want, tt.skipped)
		}
	}
	_, err = ws.Grep(ctx, GrepParams{Pattern: "("})
	wantToolError(t, err, reasonInvalid)
}

func TestListingsTruncate(t *testing.T) {
	ws := newTestWorkspace(t)
	ctx := context.Background()
	for i := range MaxListEntries + 5 {
		writeHostFile(t, ws, fmt.Sprintf("d/f%05d.txt", i), "hit\n")
	}
	ls, err := ws.Ls(ctx, LsParams{Path: "d"})
	if err != nil || len(ls.Entries) != MaxListEntries || !ls.Truncated {
		t.Fatalf("ls: %d entries, truncated %v, %v", len(ls.Entries), ls.Truncated, err)
	}
	g, err := ws.Glob(ctx, GlobParams{Pattern: "**/*.txt"})
	if err != nil || len(g.Matches) != MaxListEntries || !g.Truncated {
		t.Fatalf("glob: %d matches, truncated %v, %v", len(g.Matches), g.Truncated, err)
	}
	gr, err := ws.Grep(ctx, GrepParams{Pattern: "hit"})
	if err != nil || len(gr.Matches) != MaxListEntries || !gr.Truncated {
		t.Fatalf("grep: %d matches, truncated %v, %v", len(gr.Matches), gr.Truncated, err)
	}
}
