package tools

import (
	"io/fs"
	"path/filepath"
	"slices"
)

// entryState is what a snapshot remembers of one workspace entry.
type entryState struct {
	size  int64
	mtime int64
	mode  fs.FileMode
}

// snapshot is a bounded picture of the workspace tree.
type snapshot struct {
	entries  map[string]entryState
	complete bool
}

// hostPath maps a clean relative path to its host path.
func (w *Workspace) hostPath(rel string) string {
	if rel == "." {
		return w.dir
	}
	return filepath.Join(w.dir, filepath.FromSlash(rel))
}

// snapshot records (path, size, mtime, type) for up to MaxSnapshotEntries
// entries under the workspace, without following symlinks.
func (w *Workspace) snapshot() snapshot {
	s := snapshot{entries: make(map[string]entryState), complete: true}
	_ = filepath.WalkDir(w.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == w.dir {
			return nil
		}
		if len(s.entries) >= MaxSnapshotEntries {
			s.complete = false
			return filepath.SkipAll
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, err := filepath.Rel(w.dir, p)
		if err != nil {
			return nil
		}
		st := entryState{size: info.Size(), mtime: info.ModTime().UnixNano(), mode: info.Mode().Type()}
		if d.IsDir() {
			st.size, st.mtime = 0, 0 // a directory's own mtime is noise
		}
		s.entries[filepath.ToSlash(rel)] = st
		return nil
	})
	return s
}

// diffSnapshots lists what changed between two snapshots, sorted by path,
// at most limit entries. partial reports a cut list or an incomplete walk.
func diffSnapshots(before, after snapshot, limit int) (changes []FileChange, partial bool) {
	changes = []FileChange{}
	for p, a := range after.entries {
		b, ok := before.entries[p]
		switch {
		case !ok:
			changes = append(changes, FileChange{Path: p, Change: ChangeCreated})
		case a != b:
			changes = append(changes, FileChange{Path: p, Change: ChangeModified})
		}
	}
	if after.complete {
		for p := range before.entries {
			if _, ok := after.entries[p]; !ok {
				changes = append(changes, FileChange{Path: p, Change: ChangeRemoved})
			}
		}
	}
	slices.SortFunc(changes, func(x, y FileChange) int {
		switch {
		case x.Path < y.Path:
			return -1
		case x.Path > y.Path:
			return 1
		}
		return 0
	})
	partial = !before.complete || !after.complete
	if len(changes) > limit {
		changes = changes[:limit]
		partial = true
	}
	return changes, partial
}
