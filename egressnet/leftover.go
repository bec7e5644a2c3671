package egressnet

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/podbot/podbot/errdefs"
)

// MarkerFile, in a sandbox's egress directory, names the engine endpoint
// the sandbox was launched on. Prune removes a directory whose sandbox and
// proxy are gone only when the marker names its own engine: two engines
// may share one egress root, and a sandbox missing on one may run on the
// other.
const MarkerFile = "engine"

// maxMarkerBytes bounds the marker's size; an endpoint is far shorter.
const maxMarkerBytes = 4096

// Mark writes the marker naming engine endpoint into d.Root (mode 0600,
// atomically). Its modification time is also when a launch last claimed
// the directory, which keeps Leftovers away from a launch in progress.
func (d Dirs) Mark(endpoint string) error {
	p := filepath.Join(d.Root, MarkerFile)
	tmp, err := os.CreateTemp(d.Root, "."+MarkerFile+"-*")
	if err != nil {
		return &errdefs.FilesystemError{Op: "write", Path: p, Msg: "cannot mark the egress directory", Err: err}
	}
	_, werr := io.WriteString(tmp, endpoint)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return &errdefs.FilesystemError{Op: "write", Path: p, Msg: "cannot mark the egress directory", Err: err}
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		_ = os.Remove(tmp.Name())
		return &errdefs.FilesystemError{Op: "rename", Path: p, Msg: "cannot mark the egress directory", Err: err}
	}
	return nil
}

// LeftoverOptions are the inputs of Leftovers.
type LeftoverOptions struct {
	// Root is the egress root to scan (StateRoot).
	Root string
	// Endpoint is the engine whose directories are wanted: only a marker
	// holding exactly this qualifies.
	Endpoint string
	// Before excludes a directory whose marker was written at or after
	// it (a launch may still be making that sandbox).
	Before time.Time
	// Max bounds how many entries of Root are looked at.
	Max int
}

// Leftovers returns the sandbox directories under opts.Root that podbot
// made for opts.Endpoint before opts.Before: real directories (never a
// symlink, which is not followed), owned by this process's user, named as
// a sandbox directory, holding a regular MarkerFile that names the
// endpoint. Whether their sandbox still exists is the caller's to check.
// A missing root gives none.
func Leftovers(opts LeftoverOptions) ([]Dirs, error) {
	fi, err := os.Lstat(opts.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "stat", Path: opts.Root, Msg: "cannot read the egress root", Err: err}
	}
	if !fi.IsDir() || !ownedByMe(fi) {
		return nil, nil // a symlink or someone else's: not podbot's to scan
	}
	f, err := os.Open(opts.Root)
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "open", Path: opts.Root, Msg: "cannot read the egress root", Err: err}
	}
	defer f.Close()
	ents, err := f.ReadDir(opts.Max)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, &errdefs.FilesystemError{Op: "readdir", Path: opts.Root, Msg: "cannot read the egress root", Err: err}
	}
	var out []Dirs
	for _, e := range ents {
		if !e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		if !validSandboxDir(e.Name()) {
			continue
		}
		d := dirsAt(opts.Root, e.Name())
		if markedFor(d.Root, opts.Endpoint, opts.Before) {
			out = append(out, d)
		}
	}
	return out, nil
}

// markedFor reports whether dir is a real directory of this user's whose
// marker is a regular file, older than before, naming endpoint.
func markedFor(dir, endpoint string, before time.Time) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || !ownedByMe(fi) {
		return false
	}
	p := filepath.Join(dir, MarkerFile)
	mi, err := os.Lstat(p)
	if err != nil || !mi.Mode().IsRegular() || !ownedByMe(mi) || mi.Size() > maxMarkerBytes || !mi.ModTime().Before(before) {
		return false
	}
	b, err := os.ReadFile(p) // a regular file, checked above; bounded by its size
	if err != nil || len(b) > maxMarkerBytes {
		return false
	}
	return endpoint != "" && bytes.Equal(b, []byte(endpoint))
}
