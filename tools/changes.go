package tools

import (
	"slices"
	"strings"
)

// changeTracker follows what happens under the workspace as it happens, so
// that a shell_execute learns what its command changed without walking
// the tree before and after (a walk costs a stat per entry: ~100 ms for
// 20,000 entries on a small VM, twice per call). Its methods are safe for
// concurrent use.
type changeTracker interface {
	// begin opens a window at the current point; ok is false when the
	// tracker can no longer follow the tree (the caller falls back to
	// snapshots).
	begin() (seq uint64, ok bool)
	// end closes the window begun at seq and returns its net changes,
	// sorted by path, at most limit; partial reports a cut list or events
	// lost on the way.
	end(seq uint64, limit int) (changes []FileChange, partial bool)
	close()
}

// changeWindow is one command's view of the workspace's changes: a point
// in the tracker's record or, without a tracker, a snapshot of the tree.
type changeWindow struct {
	seq     uint64
	tracked bool
	before  snapshot
}

// beginChanges opens a window over the workspace's changes.
func (w *Workspace) beginChanges() changeWindow {
	if t := w.changeTracker(); t != nil {
		if seq, ok := t.begin(); ok {
			return changeWindow{seq: seq, tracked: true}
		}
	}
	return changeWindow{before: w.snapshot()}
}

// endChanges closes c and lists what changed since it began.
func (w *Workspace) endChanges(c changeWindow, limit int) ([]FileChange, bool) {
	if c.tracked {
		return w.tracker.end(c.seq, limit)
	}
	return diffSnapshots(c.before, w.snapshot(), limit)
}

// abandonChanges closes c without listing anything.
func (w *Workspace) abandonChanges(c changeWindow) {
	if c.tracked {
		w.tracker.end(c.seq, 0)
	}
}

// changeTracker starts the workspace's tracker on first use; nil when the
// platform or the kernel's limits do not allow one.
func (w *Workspace) changeTracker() changeTracker {
	w.trackOnce.Do(func() {
		if !w.snapshotsOnly {
			w.tracker = newChangeTracker(w.dir, w.root)
		}
	})
	return w.tracker
}

// changeKind is what one recorded event did to a path.
type changeKind uint8

const (
	pathCreated changeKind = iota + 1
	pathModified
	pathRemoved
)

// pathEvent is one recorded event: a path relative to the workspace root,
// slash-separated.
type pathEvent struct {
	path string
	kind changeKind
}

// foldEvents turns a window's events, in order, into net changes: a path
// that existed before and after is modified, one that appeared is created,
// one that went away is removed, and one created and removed again inside
// the window is not listed. The result is sorted by path and cut at limit.
func foldEvents(events []pathEvent, limit int) (changes []FileChange, partial bool) {
	type netState struct{ before, after bool }
	net := make(map[string]netState, len(events))
	for _, e := range events {
		s, seen := net[e.path]
		if !seen {
			s.before = e.kind != pathCreated
		}
		s.after = e.kind != pathRemoved
		net[e.path] = s
	}
	changes = []FileChange{}
	for p, s := range net {
		switch {
		case s.before && s.after:
			changes = append(changes, FileChange{Path: p, Change: ChangeModified})
		case s.after:
			changes = append(changes, FileChange{Path: p, Change: ChangeCreated})
		case s.before:
			changes = append(changes, FileChange{Path: p, Change: ChangeRemoved})
		}
	}
	slices.SortFunc(changes, func(x, y FileChange) int { return strings.Compare(x.Path, y.Path) })
	if len(changes) > limit {
		return changes[:limit], true
	}
	return changes, false
}

// joinRel joins a slash-separated relative directory ("" for the root)
// and an entry name.
func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
