//go:build linux

package tools

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// snapshotsOnly makes a workspace compare snapshots, never track.
func snapshotsOnly() Option {
	return func(c *workspaceConfig) error {
		c.snapshotsOnly = true
		return nil
	}
}

// changedBy runs sh -c script in ws and returns its changed_files as
// "change path" lines.
func changedBy(t *testing.T, ws *Workspace, script string) ([]string, bool) {
	t.Helper()
	res, err := ws.ShellExecute(context.Background(), ShellParams{Command: []string{"sh", "-c", script}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%s: %v %+v", script, err, res)
	}
	var out []string
	for _, c := range res.ChangedFiles {
		out = append(out, c.Change+" "+c.Path)
	}
	return out, res.ChangedFilesTruncated
}

// TestChangeTrackerMatchesSnapshots runs the same commands in a tracked
// workspace and in one that compares snapshots, from the same tree, and
// expects the same changed_files.
func TestChangeTrackerMatchesSnapshots(t *testing.T) {
	setup := "mkdir -p keep/deep old/a/b tree/x && echo 1 > keep/deep/f && echo 2 > mod && echo 3 > gone && " +
		"echo 4 > old/a/b/f && echo 5 > tree/x/f && echo 6 > again && echo 7 > file"
	scripts := []string{
		"true",
		"echo hi > new.txt",
		"echo more >> mod",
		"rm gone",
		"mkdir -p p/q/r && touch p/q/r/f p/top",
		"rm -rf tree",
		"mv file renamed",
		"touch tmp && rm tmp",
		"rm again && echo changed-size > again",
		"mkdir burst && for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do mkdir burst/$i; echo $i > burst/$i/f; done",
		"ln -s /etc link && ln -s .. up",
		"mkdir moving && echo x > moving/f && mv moving settled && echo y > settled/g",
		"mkdir -p keep/new && mv keep/new keep/newer",
		"echo z > keep/deep/f",
	}
	for _, script := range scripts {
		t.Run(script, func(t *testing.T) {
			tracked, err := NewWorkspace(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer tracked.Close()
			walked, err := NewWorkspace(t.TempDir(), snapshotsOnly())
			if err != nil {
				t.Fatal(err)
			}
			defer walked.Close()
			changedBy(t, tracked, setup)
			changedBy(t, walked, setup)
			if tracked.changeTracker() == nil {
				t.Fatal("no change tracker on Linux")
			}
			got, gotPartial := changedBy(t, tracked, script)
			want, wantPartial := changedBy(t, walked, script)
			if !slices.Equal(got, want) || gotPartial != wantPartial {
				t.Errorf("tracker: %q (partial %v)\nsnapshots: %q (partial %v)", got, gotPartial, want, wantPartial)
			}
		})
	}
}

// TestChangeTrackerFirstCommand checks the very first command: the tracker
// starts before it runs.
func TestChangeTrackerFirstCommand(t *testing.T) {
	ws := newTestWorkspace(t)
	got, _ := changedBy(t, ws, "mkdir d && echo x > d/f")
	if want := []string{"created d", "created d/f"}; !slices.Equal(got, want) {
		t.Errorf("changed_files = %q, want %q", got, want)
	}
}

// TestChangeTrackerDirectoryMoved documents where the tracker lists less
// than a snapshot would: a directory that existed before and moves away,
// out of the workspace or to another name in it, is listed once under its
// old name, not entry by entry (naming them would take a walk of the tree
// before every command); under a new name in the workspace, its entries
// are listed one by one.
func TestChangeTrackerDirectoryMoved(t *testing.T) {
	ws := newTestWorkspace(t)
	outside := filepath.Join(t.TempDir(), "away")
	changedBy(t, ws, "mkdir -p d/e m/n && echo x > d/e/f && echo y > m/n/f")
	got, _ := changedBy(t, ws, "mv m moved")
	if want := []string{"removed m", "created moved", "created moved/n", "created moved/n/f"}; !slices.Equal(got, want) {
		t.Errorf("renamed: changed_files = %q, want %q", got, want)
	}
	got, _ = changedBy(t, ws, "mv d "+outside)
	if want := []string{"removed d"}; !slices.Equal(got, want) {
		t.Errorf("moved out: changed_files = %q, want %q", got, want)
	}
	// The moved tree is no longer followed; the workspace still is.
	if err := os.WriteFile(filepath.Join(outside, "e", "g"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ = changedBy(t, ws, "echo y > back")
	if want := []string{"created back"}; !slices.Equal(got, want) {
		t.Errorf("after the move: changed_files = %q, want %q", got, want)
	}
}

// newTestTracker starts a tracker on dir.
func newTestTracker(t *testing.T, dir string) changeTracker {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	tr := newChangeTracker(dir, root)
	return tr
}

// TestChangeTrackerOverlappingWindows checks concurrent commands: each
// window sees what happened while it was open, and nothing from before.
func TestChangeTrackerOverlappingWindows(t *testing.T) {
	dir := t.TempDir()
	tr := newTestTracker(t, dir)
	defer tr.close()
	write := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("before")
	a, _ := tr.begin()
	write("one")
	b, _ := tr.begin()
	write("two")
	gotA, partialA := tr.end(a, 10)
	write("three")
	gotB, partialB := tr.end(b, 10)
	c, _ := tr.begin()
	gotC, _ := tr.end(c, 10)
	names := func(cs []FileChange) (out []string) {
		for _, c := range cs {
			out = append(out, c.Change+" "+c.Path)
		}
		return out
	}
	if want := []string{"created one", "created two"}; !slices.Equal(names(gotA), want) || partialA {
		t.Errorf("window a = %q (partial %v), want %q", names(gotA), partialA, want)
	}
	if want := []string{"created three", "created two"}; !slices.Equal(names(gotB), want) || partialB {
		t.Errorf("window b = %q (partial %v), want %q", names(gotB), partialB, want)
	}
	if len(gotC) != 0 {
		t.Errorf("an empty window saw %q", names(gotC))
	}
}

// TestChangeTrackerLostEventsArePartial overflows the kernel's event
// queue inside one window: the window is marked partial, and the next one
// is whole again.
func TestChangeTrackerLostEventsArePartial(t *testing.T) {
	queue := 16384
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			queue = n
		}
	}
	if queue > 100000 {
		t.Skipf("max_queued_events is %d: overflowing it would take too long here", queue)
	}
	dir := t.TempDir()
	tr := newTestTracker(t, dir)
	defer tr.close()
	seq, _ := tr.begin()
	for i := range queue + 100 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, partial := tr.end(seq, MaxChangedFiles); !partial {
		t.Error("a window that lost events is not marked partial")
	}
	seq, ok := tr.begin()
	if !ok {
		t.Fatal("the tracker gave up after an overflow")
	}
	if err := os.Mkdir(filepath.Join(dir, "after"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "after", "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, partial := tr.end(seq, MaxChangedFiles)
	if partial || len(got) != 2 || got[0].Path != "after" || got[1].Path != "after/f" {
		t.Errorf("after the overflow: %v (partial %v)", got, partial)
	}
}

// TestChangeTrackerRootRemoved gives up when the workspace root itself
// goes: the workspace falls back to snapshots.
func TestChangeTrackerRootRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tr := newTestTracker(t, dir)
	defer tr.close()
	seq, _ := tr.begin()
	if err := os.Rename(dir, dir+".moved"); err != nil {
		t.Fatal(err)
	}
	if _, partial := tr.end(seq, 10); !partial {
		t.Error("a window whose root moved away is not partial")
	}
	if _, ok := tr.begin(); ok {
		t.Error("the tracker still offers windows after its root moved away")
	}
}

func TestFoldEvents(t *testing.T) {
	events := []pathEvent{
		{"a", pathCreated}, {"a", pathModified}, // created
		{"b", pathModified}, {"b", pathModified}, // modified
		{"c", pathCreated}, {"c", pathRemoved}, // nothing
		{"d", pathRemoved}, {"d", pathCreated}, // modified
		{"e", pathModified}, {"e", pathRemoved}, // removed
	}
	got, partial := foldEvents(events, 10)
	want := []FileChange{{"a", ChangeCreated}, {"b", ChangeModified}, {"d", ChangeModified}, {"e", ChangeRemoved}}
	if !slices.Equal(got, want) || partial {
		t.Errorf("foldEvents = %v (partial %v), want %v", got, partial, want)
	}
	if got, partial := foldEvents(events, 2); len(got) != 2 || !partial {
		t.Errorf("cut at 2: %v (partial %v)", got, partial)
	}
}

// TestChangeTrackerNeverFollowsSymlinks keeps the tracker inside the
// workspace: what happens behind a symlink to a directory outside it is
// never reported, whether the link was there first or made by a command.
func TestChangeTrackerNeverFollowsSymlinks(t *testing.T) {
	outside := t.TempDir()
	dir := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "early")); err != nil {
		t.Fatal(err)
	}
	tr := newTestTracker(t, dir)
	seq, _ := tr.begin()
	if err := os.Symlink(outside, filepath.Join(dir, "late")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(outside, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ := tr.end(seq, 10)
	if len(got) != 1 || got[0] != (FileChange{Path: "late", Change: ChangeCreated}) {
		t.Errorf("changes = %v, want only the new link", got)
	}
	seq, _ = tr.begin()
	if err := os.WriteFile(filepath.Join(outside, "sub", "more"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := tr.end(seq, 10); len(got) != 0 {
		t.Errorf("changes behind the links were reported: %v", got)
	}
}

// FuzzInotifyParse feeds arbitrary bytes to the event parser as if the
// kernel had queued them: it must never read past the buffer or panic,
// whatever the lengths, masks and names say, and the tracker's maps must
// only ever name directories inside the workspace.
func FuzzInotifyParse(f *testing.F) {
	event := func(wd int32, mask uint32, name string) []byte {
		padded := name
		if name != "" {
			padded += strings.Repeat("\x00", 16-len(name)%16)
		}
		b := make([]byte, 16, 16+len(padded))
		binary.NativeEndian.PutUint32(b[0:], uint32(wd))
		binary.NativeEndian.PutUint32(b[4:], mask)
		binary.NativeEndian.PutUint32(b[12:], uint32(len(padded)))
		return append(b, padded...)
	}
	f.Add(event(1, unix.IN_CREATE, "a"))
	f.Add(append(event(1, unix.IN_CREATE|unix.IN_ISDIR, "d"), event(1, unix.IN_MOVED_FROM|unix.IN_ISDIR, "d")...))
	f.Add(event(1, unix.IN_DELETE_SELF, ""))
	f.Add(event(-1, unix.IN_Q_OVERFLOW, ""))
	f.Add(event(1, unix.IN_MODIFY, "../../etc/passwd"))
	f.Add([]byte{1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 127, 'x'})
	dir := f.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		f.Fatal(err)
	}
	defer root.Close()
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, ok := newChangeTracker(dir, root).(*inotifyTracker)
		if !ok {
			t.Fatal("no change tracker")
		}
		defer tr.close()
		seq, _ := tr.begin()
		tr.parse(b)
		tr.end(seq, MaxChangedFiles)
		for _, d := range tr.dirs {
			if strings.HasPrefix(d, "/") || d == ".." || strings.HasPrefix(d, "../") {
				t.Fatalf("watched directory %q is not inside the workspace", d)
			}
		}
	})
}
