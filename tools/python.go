package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/podbot/podbot/errdefs"
)

// EvalParams are the parameters of evaluate_python.
type EvalParams struct {
	// Code is Python source, at most MaxCodeChars characters.
	Code string `json:"code"`
	// Reads are workspace text files handed to the script: the dict
	// `reads` maps each path to its content, and read_text(path) returns it.
	Reads []string `json:"reads,omitempty"`
	// Writes are workspace files the script may produce with
	// write_text(path, text) (or by writing to the file named by
	// writes[path]). They are staged outside the workspace and applied only
	// when the script exits 0 within the timeout.
	Writes []string `json:"writes,omitempty"`
}

// EvalResult is the result of evaluate_python. A script that raises is a
// normal result with a non-zero exit code and nothing written.
type EvalResult struct {
	// Stdout and Stderr hold at most MaxPythonOutputChars characters each.
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	// ExitCode is the interpreter's exit status (124 on timeout).
	ExitCode int `json:"exit_code"`
	// TimedOut is true when the PythonTimeout killed the script.
	TimedOut bool `json:"timed_out"`
	// DurationMS is the wall time in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// Reads echoes the files passed to the script (relative to /workspace).
	Reads []string `json:"reads"`
	// Writes lists the staged files applied to the workspace.
	Writes []string `json:"writes"`
}

const evalTool = "evaluate_python"

// pythonPrelude loads the call's inputs, defines the helpers and runs the
// caller's code under the file name "<code>" so tracebacks point at it.
const pythonPrelude = `import json as _json, sys as _sys
with open(_sys.argv[1], encoding="utf-8") as _f:
    _spec = _json.load(_f)
reads = _spec["reads"]
writes = _spec["writes"]
def read_text(path):
    if path not in reads:
        raise KeyError(f"{path!r} was not listed in the reads parameter")
    return reads[path]
def write_text(path, text):
    if path not in writes:
        raise KeyError(f"{path!r} was not listed in the writes parameter")
    with open(writes[path], "w", encoding="utf-8") as f:
        f.write(text)
_code = compile(_spec["code"], "<code>", "exec")
del _f, _spec, _json
exec(_code)
`

type evalCall struct {
	code          string
	reads, writes []string
}

// Validate checks p against the evaluate_python contract.
func (p EvalParams) Validate() error {
	_, err := p.check()
	return err
}

func (p EvalParams) check() (evalCall, error) {
	if strings.TrimSpace(p.Code) == "" {
		return evalCall{}, invalid(evalTool, "code", "is empty; give Python source such as \"print(1 + 1)\"")
	}
	if n := utf8.RuneCountInString(p.Code); n > MaxCodeChars {
		return evalCall{}, invalid(evalTool, "code", fmt.Sprintf("is %d characters; keep it at most %d (write a script with write_file and run it with shell_execute)", n, MaxCodeChars))
	}
	if strings.IndexByte(p.Code, 0) >= 0 {
		return evalCall{}, invalid(evalTool, "code", "contains a NUL byte; remove it")
	}
	reads, err := cleanList("reads", p.Reads)
	if err != nil {
		return evalCall{}, err
	}
	writes, err := cleanList("writes", p.Writes)
	if err != nil {
		return evalCall{}, err
	}
	for _, r := range reads {
		for _, wr := range writes {
			if overlaps(r, wr) {
				return evalCall{}, invalid(evalTool, "writes", fmt.Sprintf("%s overlaps read %s; a file may be read or written, not both (write to a new path)", wr, r))
			}
		}
	}
	return evalCall{code: p.Code, reads: reads, writes: writes}, nil
}

func cleanList(param string, paths []string) ([]string, error) {
	if len(paths) > MaxEvalFiles {
		return nil, invalid(evalTool, param, fmt.Sprintf("lists %d files; give at most %d", len(paths), MaxEvalFiles))
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		rel, err := CleanPath(evalTool, param, p, false)
		if err != nil {
			return nil, err
		}
		for _, prev := range out {
			if prev == rel {
				return nil, invalid(evalTool, param, fmt.Sprintf("lists %s twice; name each file once", rel))
			}
			if overlaps(prev, rel) {
				return nil, invalid(evalTool, param, fmt.Sprintf("%s and %s overlap (one contains the other); name separate files", prev, rel))
			}
		}
		out = append(out, rel)
	}
	return out, nil
}

// overlaps reports whether a and b are the same path or one contains the other.
func overlaps(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// EvaluatePython runs code with python3 -c in the workspace root, with a
// fixed PythonTimeout. Declared writes are applied only when it succeeds.
func (w *Workspace) EvaluatePython(ctx context.Context, p EvalParams) (EvalResult, error) {
	c, err := p.check()
	if err != nil {
		return EvalResult{}, err
	}
	readData := make(map[string]string, len(c.reads))
	for _, r := range c.reads {
		text, err := w.readSmallText(ctx, evalTool, "reads", r, MaxReadBytes)
		if err != nil {
			return EvalResult{}, err
		}
		readData[r] = text
	}

	stage, err := os.MkdirTemp(w.tmpDir, "podbot-eval-")
	if err != nil {
		return EvalResult{}, &errdefs.FilesystemError{Op: "stage", Path: w.tmpDir, Msg: "cannot create the evaluate_python staging directory; make the temp dir writable", Err: err}
	}
	defer os.RemoveAll(stage)
	staged := make(map[string]string, len(c.writes))
	for i, wr := range c.writes {
		staged[wr] = filepath.Join(stage, "w"+strconv.Itoa(i))
	}
	spec, err := json.Marshal(map[string]any{"code": c.code, "reads": readData, "writes": staged})
	if err != nil {
		return EvalResult{}, fmt.Errorf("evaluate_python: encode inputs: %w", err)
	}
	specPath := filepath.Join(stage, "spec.json")
	if err := os.WriteFile(specPath, spec, 0o600); err != nil {
		return EvalResult{}, &errdefs.FilesystemError{Op: "stage", Path: specPath, Err: err}
	}

	out, err := w.run(ctx, runSpec{
		argv:    []string{w.python, "-c", pythonPrelude, specPath},
		dir:     w.dir,
		env:     mergeEnv(w.env, []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONIOENCODING=utf-8"}),
		timeout: PythonTimeout,
		capture: true,
		limit:   MaxPythonOutputChars * utf8.UTFMax,
	})
	if err != nil {
		return EvalResult{}, err
	}
	res := EvalResult{
		Stdout:     capChars(out.stdout, MaxPythonOutputChars),
		Stderr:     capChars(out.stderr, MaxPythonOutputChars),
		ExitCode:   out.exitCode,
		TimedOut:   out.timedOut,
		DurationMS: out.duration.Milliseconds(),
		Reads:      c.reads,
		Writes:     []string{},
	}
	if out.exitCode != 0 || out.timedOut {
		return res, nil
	}
	applied, err := w.applyStaged(c.writes, staged)
	if err != nil {
		return EvalResult{}, err
	}
	res.Writes = applied
	return res, nil
}

// applyStaged checks every staged file first and applies them only when
// all are acceptable text.
func (w *Workspace) applyStaged(order []string, staged map[string]string) ([]string, error) {
	type pending struct {
		rel  string
		data []byte
	}
	var todo []pending
	for _, rel := range order {
		data, err := readBounded(staged[rel], MaxWriteChars*utf8.UTFMax)
		if errors.Is(err, fs.ErrNotExist) {
			continue // declared but not produced
		}
		if err != nil {
			return nil, invalid(evalTool, "writes", fmt.Sprintf("staged %s: %v; nothing was written", rel, err))
		}
		if !utf8.Valid(data) {
			return nil, invalid(evalTool, "writes", fmt.Sprintf("staged %s is not UTF-8 text; nothing was written", rel))
		}
		if err := checkText(evalTool, "writes", string(data)); err != nil {
			return nil, invalid(evalTool, "writes", fmt.Sprintf("staged %s: %v; nothing was written", rel, err))
		}
		todo = append(todo, pending{rel, data})
	}
	applied := make([]string, 0, len(todo))
	for _, p := range todo {
		if dir := path.Dir(p.rel); dir != "." {
			if err := w.root.MkdirAll(dir, 0o755); err != nil {
				return applied, w.fsError(evalTool, "writes", dir, err)
			}
		}
		if err := w.replaceFile(evalTool, "writes", p.rel, p.data, 0o644); err != nil {
			return applied, err
		}
		applied = append(applied, p.rel)
	}
	return applied, nil
}

// readSmallText reads a workspace text file of at most maxBytes.
func (w *Workspace) readSmallText(ctx context.Context, tool, param, rel string, maxBytes int64) (string, error) {
	f, _, err := w.openText(ctx, tool, param, rel)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return "", w.fsError(tool, param, rel, err)
	}
	if int64(len(data)) > maxBytes {
		return "", invalid(tool, param, fmt.Sprintf("%s is larger than %d bytes; read it in the script with open() instead", rel, maxBytes))
	}
	if !utf8.Valid(data) {
		return "", binaryRefused(tool, param, rel)
	}
	return string(data), nil
}

// readBounded reads a host file (a staged write), refusing more than maxBytes.
// A symlink is refused: the script ran with the staging paths in hand.
func readBounded(name string, maxBytes int64) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|openNoFollow|openNoWait, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("is not a regular file (it is a %s)", typeName(st.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > maxBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxBytes)
	}
	return data, nil
}

// capChars keeps s within n characters, marker included.
func capChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	s = strings.TrimSuffix(s, "\n"+TruncatedMarker)
	return truncateRunes(s, n-len(TruncatedMarker)-1)
}
