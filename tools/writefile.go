package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/podbot/podbot/errdefs"
)

// WriteFileParams are the parameters of write_file.
type WriteFileParams struct {
	// FilePath is the file to create, relative to /workspace. Missing
	// parent directories are created.
	FilePath string `json:"file_path"`
	// Content is the text to write, at most MaxWriteChars characters.
	Content string `json:"content"`
}

// WriteFileResult is the result of write_file.
type WriteFileResult struct {
	// FilePath is the logical path written.
	FilePath string `json:"file_path"`
	// BytesWritten is the size of the new file.
	BytesWritten int `json:"bytes_written"`
}

// EditFileParams are the parameters of edit_file.
type EditFileParams struct {
	// FilePath is the file to edit, relative to /workspace.
	FilePath string `json:"file_path"`
	// OldString is the exact text to replace; it must occur exactly once
	// unless ReplaceAll is set.
	OldString string `json:"old_string"`
	// NewString replaces it.
	NewString string `json:"new_string"`
	// ReplaceAll replaces every occurrence.
	ReplaceAll bool `json:"replace_all,omitempty"`
}

// EditFileResult is the result of edit_file.
type EditFileResult struct {
	// FilePath is the logical path edited.
	FilePath string `json:"file_path"`
	// Replacements is how many occurrences were replaced.
	Replacements int `json:"replacements"`
}

const (
	writeTool = "write_file"
	editTool  = "edit_file"
)

// Validate checks p against the write_file contract.
func (p WriteFileParams) Validate() error {
	_, err := p.check()
	return err
}

func (p WriteFileParams) check() (string, error) {
	rel, err := CleanPath(writeTool, "file_path", p.FilePath, false)
	if err != nil {
		return "", err
	}
	return rel, checkText(writeTool, "content", p.Content)
}

func checkText(tool, param, s string) error {
	if n := utf8.RuneCountInString(s); n > MaxWriteChars {
		return invalid(tool, param, fmt.Sprintf("is %d characters; keep it at most %d (split the work into several files or edits)", n, MaxWriteChars))
	}
	if strings.IndexByte(s, 0) >= 0 {
		return invalid(tool, param, "contains a NUL byte; only text can be written")
	}
	return nil
}

// WriteFile creates a new text file; it refuses to overwrite one.
func (w *Workspace) WriteFile(ctx context.Context, p WriteFileParams) (WriteFileResult, error) {
	rel, err := p.check()
	if err != nil {
		return WriteFileResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return WriteFileResult{}, err
	}
	if dir := path.Dir(rel); dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return WriteFileResult{}, w.fsError(writeTool, "file_path", dir, err)
		}
	}
	f, err := w.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return WriteFileResult{}, &ToolError{Tool: writeTool, Param: "file_path", Reason: errdefs.ErrAlreadyExists,
			Msg: fmt.Sprintf("%s already exists; write_file only creates files, use edit_file to change it (or rm it first)", rel)}
	}
	if err != nil {
		return WriteFileResult{}, w.fsError(writeTool, "file_path", rel, err)
	}
	n, werr := io.WriteString(f, p.Content)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = w.root.Remove(rel)
		return WriteFileResult{}, w.fsError(writeTool, "file_path", rel, werr)
	}
	return WriteFileResult{FilePath: logical(rel), BytesWritten: n}, nil
}

// Validate checks p against the edit_file contract.
func (p EditFileParams) Validate() error {
	_, err := p.check()
	return err
}

func (p EditFileParams) check() (string, error) {
	rel, err := CleanPath(editTool, "file_path", p.FilePath, false)
	if err != nil {
		return "", err
	}
	if p.OldString == "" {
		return "", invalid(editTool, "old_string", "is empty; give the exact text to replace (use write_file to create a file)")
	}
	if p.OldString == p.NewString {
		return "", invalid(editTool, "new_string", "equals old_string; there is nothing to change")
	}
	if err := checkText(editTool, "old_string", p.OldString); err != nil {
		return "", err
	}
	return rel, checkText(editTool, "new_string", p.NewString)
}

// EditFile replaces text in an existing text file.
func (w *Workspace) EditFile(ctx context.Context, p EditFileParams) (EditFileResult, error) {
	rel, err := p.check()
	if err != nil {
		return EditFileResult{}, err
	}
	f, _, err := w.openText(ctx, editTool, "file_path", rel)
	if err != nil {
		return EditFileResult{}, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return EditFileResult{}, w.fsError(editTool, "file_path", rel, err)
	}
	if st.Size() > MaxEditFileBytes {
		f.Close()
		return EditFileResult{}, invalid(editTool, "file_path", fmt.Sprintf("%s is %d bytes; edit_file handles files up to %d bytes, use shell_execute (e.g. sed) for larger ones", rel, st.Size(), MaxEditFileBytes))
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxEditFileBytes+1))
	f.Close()
	if err != nil {
		return EditFileResult{}, w.fsError(editTool, "file_path", rel, err)
	}
	text := string(data)
	count := strings.Count(text, p.OldString)
	switch {
	case count == 0:
		return EditFileResult{}, &ToolError{Tool: editTool, Param: "old_string", Reason: errdefs.ErrNotFound,
			Msg: fmt.Sprintf("does not occur in %s; read_file it and copy the exact text, whitespace included", rel)}
	case count > 1 && !p.ReplaceAll:
		return EditFileResult{}, invalid(editTool, "old_string", fmt.Sprintf("occurs %d times in %s; include more surrounding text so it matches once, or set replace_all", count, rel))
	}
	newSize := len(text) + count*(len(p.NewString)-len(p.OldString))
	if newSize > MaxEditFileBytes {
		return EditFileResult{}, invalid(editTool, "new_string", fmt.Sprintf("would grow %s to %d bytes; keep files edited this way under %d bytes", rel, newSize, MaxEditFileBytes))
	}
	n := 1
	if p.ReplaceAll {
		n = -1
	}
	out := strings.Replace(text, p.OldString, p.NewString, n)
	if err := w.replaceFile(editTool, "file_path", rel, []byte(out), st.Mode().Perm()); err != nil {
		return EditFileResult{}, err
	}
	if !p.ReplaceAll {
		count = 1
	}
	return EditFileResult{FilePath: logical(rel), Replacements: count}, nil
}
