package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// CleanPath validates a tool path and returns it in canonical relative form
// ("." for the workspace root, otherwise slash-separated segments without
// "." or empty parts).
//
// A path must be relative to /workspace; as a convenience "/workspace" and
// "/workspace/..." are accepted and made relative. Any other absolute path,
// any ".." segment, non-ASCII or control characters, more than
// MaxPathSegments segments or a segment longer than MaxSegmentChars is
// refused. An empty path means the root only when allowRoot is true.
func CleanPath(tool, param, p string, allowRoot bool) (string, error) {
	if p == WorkspaceName || strings.HasPrefix(p, WorkspaceName+"/") {
		p = strings.TrimPrefix(p, WorkspaceName)
		p = strings.TrimLeft(p, "/")
	} else if strings.HasPrefix(p, "/") {
		return "", refused(tool, param, fmt.Sprintf("%q is an absolute path outside %s; give a path relative to %s", p, WorkspaceName, WorkspaceName))
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c >= 0x80 {
			return "", invalid(tool, param, fmt.Sprintf("%q contains non-ASCII characters; use ASCII path names", p))
		}
		if c < 0x20 || c == 0x7f {
			return "", invalid(tool, param, fmt.Sprintf("%q contains a control character; remove it", p))
		}
	}
	var segs []string
	for s := range strings.SplitSeq(p, "/") {
		switch {
		case s == "" || s == ".":
			continue
		case s == "..":
			return "", refused(tool, param, fmt.Sprintf("%q contains \"..\"; paths may not leave %s, name the target relative to it", p, WorkspaceName))
		case len(s) > MaxSegmentChars:
			return "", invalid(tool, param, fmt.Sprintf("segment %.20q... is %d characters; keep each segment at most %d", s, len(s), MaxSegmentChars))
		}
		segs = append(segs, s)
	}
	if len(segs) > MaxPathSegments {
		return "", invalid(tool, param, fmt.Sprintf("%q has %d segments; use at most %d", p, len(segs), MaxPathSegments))
	}
	if len(segs) == 0 {
		if !allowRoot {
			return "", invalid(tool, param, fmt.Sprintf("a path inside %s is required, not the root itself", WorkspaceName))
		}
		return ".", nil
	}
	return strings.Join(segs, "/"), nil
}

// logical returns the path as models see it: /workspace/rel.
func logical(rel string) string {
	if rel == "." || rel == "" {
		return WorkspaceName
	}
	return WorkspaceName + "/" + rel
}

// fsError turns an error from the workspace root into a ToolError that
// names the path and the fix.
func (w *Workspace) fsError(tool, param, rel string, err error) error {
	if err == nil {
		return nil
	}
	te := &ToolError{Tool: tool, Param: param, Err: err}
	switch {
	case w.escapeErr != nil && errors.Is(err, w.escapeErr):
		te.Reason = errdefs.ErrRefused
		te.Msg = fmt.Sprintf("%s resolves outside %s (through a symlink); name a path inside it", rel, WorkspaceName)
		te.Err = nil
	case errors.Is(err, fs.ErrNotExist):
		te.Reason = errdefs.ErrNotFound
		te.Msg = fmt.Sprintf("%s does not exist; check the name with ls or glob", rel)
		te.Err = nil
	case errors.Is(err, fs.ErrExist):
		te.Reason = errdefs.ErrAlreadyExists
		te.Msg = fmt.Sprintf("%s already exists", rel)
		te.Err = nil
	case errors.Is(err, fs.ErrPermission):
		te.Reason = errdefs.ErrPermissionDenied
		te.Msg = fmt.Sprintf("%s is not accessible", rel)
	default:
		te.Reason = errdefs.ErrInvalidValue
		te.Msg = fmt.Sprintf("%s could not be used", rel)
	}
	return te
}
