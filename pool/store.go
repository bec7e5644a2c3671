package pool

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/podbot/podbot/errdefs"
)

// Store keeps pool definitions and statuses as JSON files in one private
// directory: NAME.json (the Spec, written by pool create and resize) and
// NAME.status.json (the Status, written by the refiller). Every write
// replaces its file atomically, so a reader never sees half a file and the
// two writers never overwrite each other's data.
type Store struct {
	dir string
}

// maxFileBytes bounds a state file read.
const maxFileBytes = 64 << 10

// maxPools bounds how many pool files the store reads.
const maxPools = 256

// OpenStore returns the store in dir, creating it (0700) when missing. dir
// must be absolute and must not be a symbolic link.
func OpenStore(dir string) (*Store, error) {
	if !filepath.IsAbs(dir) {
		return nil, &errdefs.ConfigError{Key: "pool.state_dir", Reason: errdefs.ErrInvalidValue,
			Msg: "the pool state directory " + dir + " must be an absolute path"}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, &errdefs.FilesystemError{Op: "create pool state directory", Path: dir, Err: err}
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "check pool state directory", Path: dir, Err: err}
	}
	if !st.IsDir() || st.Mode().Perm()&0o022 != 0 || !ownedByMe(st) {
		return nil, &errdefs.FilesystemError{Op: "check pool state directory", Path: dir, Reason: errdefs.ErrPermissionDenied,
			Msg: "the pool state directory must be a real directory of this user that others cannot write to; fix its owner or mode, or set pool.state_dir"}
	}
	return &Store{dir: dir}, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Status is what a refiller last saw and did for one pool.
type Status struct {
	// Ready counts members ready to claim.
	Ready int `json:"ready"`
	// Starting counts members being made.
	Starting int `json:"starting"`
	// Claimed counts members handed out that still exist.
	Claimed int `json:"claimed"`
	// Failing counts creates that failed in a row (0 when the last worked).
	Failing int `json:"failing"`
	// LastError is the last create or removal error, bounded in length.
	LastError string `json:"last_error,omitempty"`
	// LastErrorAt is when LastError happened.
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// RetryAt is when the refiller tries again after failures (backoff).
	RetryAt time.Time `json:"retry_at,omitzero"`
	// UpdatedAt is when the refiller wrote this status.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// maxErrorText bounds LastError.
const maxErrorText = 512

func (s *Store) specPath(name string) string   { return filepath.Join(s.dir, name+".json") }
func (s *Store) statusPath(name string) string { return filepath.Join(s.dir, name+".status.json") }

// Put writes spec (after Check).
func (s *Store) Put(spec Spec) error {
	if err := spec.Check(); err != nil {
		return err
	}
	return s.write(s.specPath(spec.Name), spec)
}

// Get reads the spec of pool name; a missing pool matches errdefs.ErrNotFound.
func (s *Store) Get(name string) (Spec, error) {
	var spec Spec
	if err := ValidName(name); err != nil {
		return spec, err
	}
	if err := s.read(s.specPath(name), &spec); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return spec, &errdefs.ConfigError{Key: "pool", Reason: errdefs.ErrNotFound,
				Msg: "no pool named " + name + "; create it with `podbot pool create " + name + " --size N` or declare it in [[pools]]"}
		}
		return spec, err
	}
	if spec.Name != name {
		return spec, &errdefs.FilesystemError{Op: "read pool", Path: s.specPath(name), Reason: errdefs.ErrInvalidValue,
			Msg: "the pool file names another pool"}
	}
	return spec, spec.Check()
}

// List reads every pool's spec, sorted by name.
func (s *Store) List() ([]Spec, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "list pools", Path: s.dir, Err: err}
	}
	var out []Spec
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasSuffix(name, ".status") || !e.Type().IsRegular() || ValidName(name) != nil {
			continue
		}
		if len(out) == maxPools {
			break
		}
		spec, err := s.Get(name)
		if err != nil {
			return nil, err
		}
		out = append(out, spec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Delete removes pool name's spec and status.
func (s *Store) Delete(name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	for _, p := range []string{s.specPath(name), s.statusPath(name)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return &errdefs.FilesystemError{Op: "remove pool file", Path: p, Err: err}
		}
	}
	return nil
}

// PutStatus writes pool name's status, bounding its error text.
func (s *Store) PutStatus(name string, st Status) error {
	if err := ValidName(name); err != nil {
		return err
	}
	st.LastError = truncate(st.LastError, maxErrorText)
	return s.write(s.statusPath(name), st)
}

// GetStatus reads pool name's status; a pool no refiller has served yet
// has the zero Status.
func (s *Store) GetStatus(name string) (Status, error) {
	var st Status
	if err := ValidName(name); err != nil {
		return st, err
	}
	err := s.read(s.statusPath(name), &st)
	if errors.Is(err, fs.ErrNotExist) {
		return Status{}, nil
	}
	return st, err
}

// read decodes one state file, opened without following a link and
// bounded in size.
func (s *Store) read(path string, v any) error {
	f, err := openNoFollow(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return &errdefs.FilesystemError{Op: "open pool file", Path: path, Err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return &errdefs.FilesystemError{Op: "read pool file", Path: path, Err: err}
	}
	if len(data) > maxFileBytes {
		return &errdefs.FilesystemError{Op: "read pool file", Path: path, Reason: errdefs.ErrInvalidValue, Msg: "the file is too large"}
	}
	if err := json.Unmarshal(data, v); err != nil {
		return &errdefs.FilesystemError{Op: "decode pool file", Path: path, Reason: errdefs.ErrParse, Err: err}
	}
	return nil
}

// write replaces path atomically (temporary file in the same directory,
// synced, mode 0600, then renamed over path).
func (s *Store) write(path string, v any) (err error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return &errdefs.FilesystemError{Op: "encode pool file", Path: path, Err: err}
	}
	f, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return &errdefs.FilesystemError{Op: "write pool file", Path: path, Err: err}
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(append(data, '\n')); err != nil {
		return &errdefs.FilesystemError{Op: "write pool file", Path: path, Err: err}
	}
	if err = f.Sync(); err != nil {
		return &errdefs.FilesystemError{Op: "sync pool file", Path: path, Err: err}
	}
	if err = f.Close(); err != nil {
		return &errdefs.FilesystemError{Op: "close pool file", Path: path, Err: err}
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return &errdefs.FilesystemError{Op: "replace pool file", Path: path, Err: err}
	}
	return nil
}
