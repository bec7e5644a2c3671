//go:build linux

package tools

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Bounds of the inotify tracker. Past maxWatchedDirs, or when the kernel
// refuses a watch for lack of room, the workspace goes back to snapshots.
// Past maxRecordedEvents or maxRecordedBytes, the open windows are marked
// partial and the record is dropped.
const (
	maxWatchedDirs    = MaxSnapshotEntries
	maxRecordedEvents = 4 * MaxSnapshotEntries
	maxRecordedBytes  = 8 << 20
	inotifyReadBuffer = 16 << 10
)

// watchMask is what each watched directory reports: entries created,
// removed, renamed, written or re-attributed, and the directory itself
// going away. Symlinks are never followed, and a file unlinked while open
// reports nothing more.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

// inotifyTracker watches every directory of the workspace with inotify and
// records, while at least one window is open, what happened to which path.
// Events are read only when a window begins or ends (the descriptor is
// non-blocking; no goroutine waits on it): the kernel queues an event
// before the system call that caused it returns, so when a command has
// exited, its events are in the queue.
type inotifyTracker struct {
	mu     sync.Mutex
	fd     int
	root   string         // host path of the workspace
	fs     *os.Root       // the workspace, for every directory opened
	dirs   map[int]string // watch descriptor -> directory ("" is the root)
	wds    map[string]int // directory -> watch descriptor
	log    []pathEvent    // events since the oldest open window began
	bytes  int            // path bytes held by log
	base   uint64         // sequence number of log[0]
	open   map[uint64]*openWindows
	broken bool // the tree can no longer be followed
	buf    []byte
}

// openWindows counts the windows begun at one sequence number.
type openWindows struct {
	n    int
	lost bool // events were dropped while they were open
}

// newChangeTracker watches the tree under root (fs is root opened as an
// os.Root); nil when inotify is not available or the tree has more
// directories than the tracker follows.
func newChangeTracker(root string, fs *os.Root) changeTracker {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	t := &inotifyTracker{fd: fd, root: root, fs: fs, dirs: map[int]string{}, wds: map[string]int{},
		open: map[uint64]*openWindows{}, buf: make([]byte, inotifyReadBuffer)}
	if !t.watchTree("", false) {
		unix.Close(fd)
		return nil
	}
	return t
}

func (t *inotifyTracker) begin() (uint64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.drain()
	if t.broken {
		return 0, false
	}
	seq := t.base + uint64(len(t.log))
	w := t.open[seq]
	if w == nil {
		w = &openWindows{}
		t.open[seq] = w
	}
	w.n++
	return seq, true
}

func (t *inotifyTracker) end(seq uint64, limit int) ([]FileChange, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.drain()
	from := 0
	if seq > t.base {
		from = int(seq - t.base)
	}
	changes, partial := foldEvents(t.log[from:], limit)
	if w := t.open[seq]; w != nil {
		partial = partial || w.lost || t.broken
		if w.n--; w.n == 0 {
			delete(t.open, seq)
		}
	} else {
		partial = true
	}
	t.trim()
	return changes, partial
}

func (t *inotifyTracker) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fd >= 0 {
		unix.Close(t.fd)
		t.fd = -1
	}
	t.broken = true
}

// trim drops the events no open window needs.
func (t *inotifyTracker) trim() {
	oldest, found := uint64(0), false
	for seq := range t.open {
		if !found || seq < oldest {
			oldest, found = seq, true
		}
	}
	if !found {
		t.base += uint64(len(t.log))
		t.log, t.bytes = t.log[:0], 0
		if cap(t.log) > 1024 {
			t.log = nil
		}
		return
	}
	if oldest > t.base {
		n := int(oldest - t.base)
		for _, e := range t.log[:n] {
			t.bytes -= len(e.path)
		}
		t.log = append(t.log[:0], t.log[n:]...)
		t.base = oldest
	}
}

// lose marks every open window partial and drops the record. The sequence
// moves past the dropped events and one more, so a window begun afterwards
// never shares a number with a window that lost events.
func (t *inotifyTracker) lose() {
	for _, w := range t.open {
		w.lost = true
	}
	t.base += uint64(len(t.log)) + 1
	t.log, t.bytes = nil, 0
}

// record appends one event for the open windows; with none open, nothing
// needs it.
func (t *inotifyTracker) record(path string, kind changeKind) {
	if len(t.open) == 0 {
		return
	}
	if n := len(t.log); n > 0 && t.log[n-1].path == path && t.log[n-1].kind == kind {
		return
	}
	if len(t.log) >= maxRecordedEvents || t.bytes+len(path) > maxRecordedBytes {
		t.lose()
		return
	}
	t.log = append(t.log, pathEvent{path: path, kind: kind})
	t.bytes += len(path)
}

// drain reads every queued event.
func (t *inotifyTracker) drain() {
	for !t.broken {
		n, err := unix.Read(t.fd, t.buf)
		if err == unix.EINTR {
			continue
		}
		if n <= 0 {
			if err != unix.EAGAIN {
				t.broken = true
			}
			return
		}
		t.parse(t.buf[:n])
	}
}

// parse handles the events in one read. Each is a 16-byte header (watch
// descriptor, mask, cookie, name length) and a NUL-padded name.
func (t *inotifyTracker) parse(b []byte) {
	for len(b) >= unix.SizeofInotifyEvent {
		wd := int(int32(binary.NativeEndian.Uint32(b[0:4])))
		mask := binary.NativeEndian.Uint32(b[4:8])
		nameLen := int(binary.NativeEndian.Uint32(b[12:16]))
		if nameLen > len(b)-unix.SizeofInotifyEvent {
			return
		}
		name := b[unix.SizeofInotifyEvent : unix.SizeofInotifyEvent+nameLen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		t.handle(wd, mask, string(name))
		b = b[unix.SizeofInotifyEvent+nameLen:]
	}
}

// handle records one event. A directory that moves away, within the
// workspace or out of it, is recorded once under its old name (what was in
// it is not known without a walk); one that arrives is walked, and its
// entries are recorded as created under their new names.
func (t *inotifyTracker) handle(wd int, mask uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		// Events were lost, watches for new directories among them.
		t.lose()
		if !t.watchTree("", false) {
			t.broken = true
		}
		return
	}
	if mask&unix.IN_IGNORED != 0 {
		t.forget(wd)
		return
	}
	dir, ok := t.dirs[wd]
	if !ok {
		return
	}
	if name == "" {
		// The directory itself: its parent reports it, except for the root.
		if dir == "" && mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
			t.broken = true
		}
		return
	}
	p := joinRel(dir, name)
	isDir := mask&unix.IN_ISDIR != 0
	switch {
	case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		t.record(p, pathCreated)
		if isDir && !t.watchTree(p, true) {
			t.broken = true
		}
	case mask&unix.IN_MOVED_FROM != 0:
		t.record(p, pathRemoved)
		if isDir {
			t.unwatchTree(p)
		}
	case mask&unix.IN_DELETE != 0:
		t.record(p, pathRemoved)
		if isDir {
			// Empty by now: its own watch is gone or going (IN_IGNORED).
			if w, ok := t.wds[p]; ok {
				t.forget(w)
			}
		}
	case mask&(unix.IN_MODIFY|unix.IN_ATTRIB) != 0:
		if !isDir {
			t.record(p, pathModified)
		}
	}
}

// forget drops a watch descriptor's mapping.
func (t *inotifyTracker) forget(wd int) {
	if d, ok := t.dirs[wd]; ok {
		delete(t.dirs, wd)
		if t.wds[d] == wd {
			delete(t.wds, d)
		}
	}
}

// unwatchTree removes the watches of dir and everything under it: it left
// the workspace or moved, and its watches would report stale paths.
func (t *inotifyTracker) unwatchTree(dir string) {
	prefix := dir + "/"
	for wd, d := range t.dirs {
		if d == dir || strings.HasPrefix(d, prefix) {
			_, _ = unix.InotifyRmWatch(t.fd, uint32(wd))
			t.forget(wd)
		}
	}
}

// watchTree watches dir and every directory under it, without following
// symlinks. With report, every entry found is recorded as created: dir
// just appeared, and whatever is in it arrived with it or before its
// watch was in place. It reports false when the kernel or maxWatchedDirs
// leaves no room for another watch.
//
// Each directory is opened through the workspace's os.Root, so neither a
// listing nor a watch ever lands outside the workspace, even when a
// command swaps a directory for a symlink while it is walked; the watch
// is added on that open descriptor (/proc/self/fd), the very directory
// that is listed.
func (t *inotifyTracker) watchTree(dir string, report bool) bool {
	stack := []string{dir}
	for len(stack) > 0 {
		rel := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		name := rel
		if name == "" {
			name = "."
		}
		f, err := t.fs.OpenFile(name, os.O_RDONLY|openNoWait, 0)
		if err != nil {
			continue // gone again, not reachable inside the workspace, or not readable
		}
		wd, err := t.addWatch(f, rel)
		if err != nil {
			f.Close()
			if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.ENOMEM) {
				return false
			}
			continue // not a directory (any more): nothing to follow
		}
		if _, known := t.dirs[wd]; !known && len(t.dirs) >= maxWatchedDirs {
			f.Close()
			return false
		}
		if old, ok := t.wds[rel]; ok && old != wd {
			delete(t.dirs, old)
		}
		t.dirs[wd], t.wds[rel] = rel, wd
		entries, _ := f.ReadDir(-1)
		f.Close()
		for _, e := range entries {
			child := joinRel(rel, e.Name())
			if report {
				t.record(child, pathCreated)
			}
			if e.IsDir() {
				stack = append(stack, child)
			}
		}
	}
	return true
}

// addWatch watches the directory f has open. Without /proc it falls back
// to the directory's path (the last component is still never followed).
func (t *inotifyTracker) addWatch(f *os.File, rel string) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, err
	}
	wd, werr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) {
		wd, werr = unix.InotifyAddWatch(t.fd, "/proc/self/fd/"+strconv.Itoa(int(fd)), watchMask&^unix.IN_DONT_FOLLOW)
	}); err != nil {
		return -1, err
	}
	if errors.Is(werr, unix.ENOENT) {
		wd, werr = unix.InotifyAddWatch(t.fd, filepath.Join(t.root, filepath.FromSlash(rel)), watchMask)
	}
	return wd, werr
}
