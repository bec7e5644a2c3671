package tools

import "context"

// RmParams are the parameters of rm.
type RmParams struct {
	// Path is the file or directory to remove, relative to /workspace. A
	// directory is removed with everything in it; the root cannot be removed.
	Path string `json:"path"`
}

// RmResult is the result of rm.
type RmResult struct {
	// Path is the logical path removed.
	Path string `json:"path"`
	// Type is what was removed: "file", "dir", "symlink" or "other".
	Type string `json:"type"`
}

const rmTool = "rm"

// Validate checks p against the rm contract.
func (p RmParams) Validate() error {
	_, err := CleanPath(rmTool, "path", p.Path, false)
	return err
}

// Rm removes a file, symlink or directory tree. A symlink is removed
// itself, never its target.
func (w *Workspace) Rm(ctx context.Context, p RmParams) (RmResult, error) {
	rel, err := CleanPath(rmTool, "path", p.Path, false)
	if err != nil {
		return RmResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return RmResult{}, err
	}
	st, err := w.root.Lstat(rel)
	if err != nil {
		return RmResult{}, w.fsError(rmTool, "path", rel, err)
	}
	if err := w.root.RemoveAll(rel); err != nil {
		return RmResult{}, w.fsError(rmTool, "path", rel, err)
	}
	return RmResult{Path: logical(rel), Type: entryType(st.Mode())}, nil
}
