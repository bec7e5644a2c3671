package localclone

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportSnapshotsWithItsOwnIndex runs the export script several times
// against one sandbox copy: each snapshot must match the work tree at that
// moment (new, changed and deleted files; a file the agent force-added
// past .gitignore), the agent's index must stay byte for byte as it was,
// and podbot's kept index must not leak stale entries from one run to the
// next.
func TestExportSnapshotsWithItsOwnIndex(t *testing.T) {
	ctx := context.Background()
	g := testGit(t)
	host := hostRepo(t)
	r, err := Open(ctx, g, host)
	if err != nil {
		t.Fatal(err)
	}
	base, err := r.Resolve(ctx, g, "")
	if err != nil {
		t.Fatal(err)
	}
	sbx := t.TempDir()
	var bundle bytes.Buffer
	if err := r.WriteBundle(ctx, g, &bundle, base, BranchRef("sb4")); err != nil {
		t.Fatal(err)
	}
	bpath := filepath.Join(sbx, "in.bundle")
	os.WriteFile(bpath, bundle.Bytes(), 0o644)
	dir := filepath.Join(sbx, "app")
	sh(t, sbx, CopyInCommand(bpath, dir, Branch("sb4"), "")...)
	info := Info{Name: "sb4", Repo: r.Top, Base: base, Branch: Branch("sb4"), Dir: dir}

	// files returns the snapshot's file list as the host sees it.
	files := func() string {
		t.Helper()
		argv := ExportCommand(info, false)
		c := exec.Command(argv[0], argv[1:]...)
		c.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := c.Output()
		if err != nil {
			t.Fatalf("export: %v", err)
		}
		q, err := r.Import(ctx, g, bytes.NewReader(out), []string{BranchRef("sb4"), SnapshotRef},
			map[string]string{BranchRef("sb4"): base}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		ls, err := q.Output(ctx, g, "ls-tree", "-r", "--name-only", q.Ref(SnapshotRef))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(string(ls)), " ")
	}
	agentIndex := func() []byte {
		b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	os.WriteFile(filepath.Join(dir, "new"), []byte("new\n"), 0o644)
	before := agentIndex()
	if got := files(); got != "a b new" {
		t.Fatalf("first snapshot %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "podbot-snapshot-index")); err != nil {
		t.Fatalf("podbot's index was not kept: %v", err)
	}
	os.Remove(filepath.Join(dir, "new"))
	os.Remove(filepath.Join(dir, "a"))
	os.WriteFile(filepath.Join(dir, "c"), []byte("c\n"), 0o644)
	if got := files(); got != "b c" {
		t.Fatalf("second snapshot %q", got)
	}
	if !bytes.Equal(before, agentIndex()) {
		t.Error("the export changed the agent's index")
	}
	// The agent force-adds an ignored file: its index is another file
	// than the one podbot copied, so the next snapshot starts from it
	// again (at once: no waiting for the clock to tick).
	os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.log\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "keep.log"), []byte("log\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "skip.log"), []byte("log\n"), 0o644)
	sh(t, dir, "git", "add", "-f", "keep.log")
	if got := files(); got != ".gitignore b c keep.log" {
		t.Fatalf("third snapshot %q", got)
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, ".git", "podbot-snapshot-index.??????")); len(entries) != 0 {
		t.Errorf("temporary indexes left behind: %v", entries)
	}
}
