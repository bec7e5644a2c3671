package tools

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// LsParams are the parameters of ls.
type LsParams struct {
	// Path is the directory to list, relative to /workspace (default the root).
	Path string `json:"path,omitempty"`
}

// LsEntry is one entry of an ls listing.
type LsEntry struct {
	// Name is the entry's base name.
	Name string `json:"name"`
	// Type is "file", "dir", "symlink" or "other".
	Type string `json:"type"`
	// Size is the size in bytes (of the link itself for a symlink).
	Size int64 `json:"size"`
}

// LsResult is the result of ls.
type LsResult struct {
	// Path is the logical path listed.
	Path string `json:"path"`
	// Entries are sorted by name, at most MaxListEntries.
	Entries []LsEntry `json:"entries"`
	// Truncated is true when entries were left out.
	Truncated bool `json:"truncated"`
}

const lsTool = "ls"

// Validate checks p against the ls contract.
func (p LsParams) Validate() error {
	_, err := CleanPath(lsTool, "path", p.Path, true)
	return err
}

// Ls lists a directory (or describes a single file) in the workspace.
func (w *Workspace) Ls(ctx context.Context, p LsParams) (LsResult, error) {
	rel, err := CleanPath(lsTool, "path", p.Path, true)
	if err != nil {
		return LsResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return LsResult{}, err
	}
	st, err := w.root.Stat(rel)
	if err != nil {
		return LsResult{}, w.fsError(lsTool, "path", rel, err)
	}
	res := LsResult{Path: logical(rel), Entries: []LsEntry{}}
	if !st.IsDir() {
		res.Entries = append(res.Entries, LsEntry{Name: st.Name(), Type: entryType(st.Mode()), Size: st.Size()})
		return res, nil
	}
	f, err := w.openRead(rel)
	if err != nil {
		return LsResult{}, w.fsError(lsTool, "path", rel, err)
	}
	defer f.Close()
	var ents []fs.DirEntry
	for len(ents) < MaxWalkEntries {
		batch, err := f.ReadDir(1024)
		ents = append(ents, batch...)
		if err != nil || len(batch) == 0 {
			break
		}
	}
	if len(ents) >= MaxWalkEntries {
		res.Truncated = true
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	if len(ents) > MaxListEntries {
		ents = ents[:MaxListEntries]
		res.Truncated = true
	}
	for _, e := range ents {
		entry := LsEntry{Name: e.Name(), Type: entryType(e.Type())}
		if info, err := e.Info(); err == nil {
			entry.Size = info.Size()
		}
		res.Entries = append(res.Entries, entry)
	}
	return res, nil
}

func entryType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsRegular():
		return "file"
	default:
		return "other"
	}
}

func notRegular(tool, param, rel string, m fs.FileMode) error {
	if m.IsDir() {
		return invalid(tool, param, fmt.Sprintf("%s is a directory; use ls or glob to see its files", rel))
	}
	return invalid(tool, param, fmt.Sprintf("%s is not a regular file (it is a %s); only regular text files can be used", rel, typeName(m)))
}

// typeName names a file type for error messages.
func typeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "fifo (named pipe)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m.IsRegular():
		return "regular file"
	default:
		return "special file"
	}
}
