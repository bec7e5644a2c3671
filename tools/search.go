package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"strings"
)

// GlobParams are the parameters of glob.
type GlobParams struct {
	// Pattern is matched against paths relative to Path; "*" stays within
	// a segment, "**" spans any number of segments.
	Pattern string `json:"pattern"`
	// Path is the directory to search, relative to /workspace (default the root).
	Path string `json:"path,omitempty"`
}

// GlobResult is the result of glob.
type GlobResult struct {
	// Pattern and Path echo the search.
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	// Matches are paths relative to /workspace, sorted, at most MaxListEntries.
	Matches []string `json:"matches"`
	// Truncated is true when matches were left out.
	Truncated bool `json:"truncated"`
}

// GrepParams are the parameters of grep.
type GrepParams struct {
	// Pattern is a regular expression (RE2 syntax).
	Pattern string `json:"pattern"`
	// Path is the file or directory to search, relative to /workspace (default the root).
	Path string `json:"path,omitempty"`
	// Glob limits the files searched: matched against the base name, or
	// against the path relative to Path when it contains "/".
	Glob string `json:"glob,omitempty"`
}

// GrepMatch is one matching line.
type GrepMatch struct {
	// Path is relative to /workspace.
	Path string `json:"path"`
	// Line is the 1-based line number.
	Line int `json:"line"`
	// Text is the line, cut at MaxGrepLineChars.
	Text string `json:"text"`
}

// GrepResult is the result of grep.
type GrepResult struct {
	// Pattern, Path and Glob echo the search.
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Glob    string `json:"glob,omitempty"`
	// Matches are in path then line order, at most MaxListEntries.
	Matches []GrepMatch `json:"matches"`
	// Truncated is true when matches were left out.
	Truncated bool `json:"truncated"`
	// SkippedFiles counts files not searched: binary, or larger than MaxGrepFileBytes.
	SkippedFiles int `json:"skipped_files"`
}

const (
	globTool = "glob"
	grepTool = "grep"
)

// Validate checks p against the glob contract.
func (p GlobParams) Validate() error {
	if _, err := CleanPath(globTool, "path", p.Path, true); err != nil {
		return err
	}
	_, err := compileGlob(globTool, "pattern", p.Pattern)
	return err
}

// Glob lists the files and directories under Path whose relative path
// matches Pattern. Symlinks are listed but not followed.
func (w *Workspace) Glob(ctx context.Context, p GlobParams) (GlobResult, error) {
	base, err := CleanPath(globTool, "path", p.Path, true)
	if err != nil {
		return GlobResult{}, err
	}
	m, err := compileGlob(globTool, "pattern", p.Pattern)
	if err != nil {
		return GlobResult{}, err
	}
	if err := w.requireDir(globTool, "path", base); err != nil {
		return GlobResult{}, err
	}
	res := GlobResult{Pattern: p.Pattern, Path: logical(base), Matches: []string{}}
	visited := 0
	err = fs.WalkDir(w.root.FS(), base, func(name string, d fs.DirEntry, err error) error {
		if err != nil || name == base {
			return nil
		}
		if visited++; visited > MaxWalkEntries {
			res.Truncated = true
			return fs.SkipAll
		}
		if visited&1023 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if m.match(relTo(base, name)) {
			if len(res.Matches) >= MaxListEntries {
				res.Truncated = true
				return fs.SkipAll
			}
			res.Matches = append(res.Matches, name)
		}
		return nil
	})
	if err != nil {
		return GlobResult{}, err
	}
	return res, nil
}

// Validate checks p against the grep contract.
func (p GrepParams) Validate() error {
	_, _, _, err := p.check()
	return err
}

func (p GrepParams) check() (string, *regexp.Regexp, *globMatcher, error) {
	base, err := CleanPath(grepTool, "path", p.Path, true)
	if err != nil {
		return "", nil, nil, err
	}
	if p.Pattern == "" {
		return "", nil, nil, invalid(grepTool, "pattern", "is empty; give a regular expression such as \"func main\"")
	}
	if len(p.Pattern) > MaxPatternChars {
		return "", nil, nil, invalid(grepTool, "pattern", fmt.Sprintf("is %d characters; keep it at most %d", len(p.Pattern), MaxPatternChars))
	}
	re, err := regexp.Compile(p.Pattern)
	if err != nil {
		return "", nil, nil, invalid(grepTool, "pattern", fmt.Sprintf("is not a valid RE2 regular expression (%v); escape special characters with \\", err))
	}
	var gm *globMatcher
	if p.Glob != "" {
		g, err := compileGlob(grepTool, "glob", p.Glob)
		if err != nil {
			return "", nil, nil, err
		}
		gm = &g
	}
	return base, re, gm, nil
}

// Grep searches text files under Path for lines matching Pattern. Binary
// and oversized files are skipped and counted; symlinks are not followed.
func (w *Workspace) Grep(ctx context.Context, p GrepParams) (GrepResult, error) {
	base, re, gm, err := p.check()
	if err != nil {
		return GrepResult{}, err
	}
	st, err := w.root.Lstat(base)
	if err != nil {
		return GrepResult{}, w.fsError(grepTool, "path", base, err)
	}
	res := GrepResult{Pattern: p.Pattern, Path: logical(base), Glob: p.Glob, Matches: []GrepMatch{}}
	if !st.IsDir() {
		if !st.Mode().IsRegular() {
			return GrepResult{}, notRegular(grepTool, "path", base, st.Mode())
		}
		err := w.grepFile(ctx, re, base, &res)
		if errors.Is(err, errStopWalk) {
			err = nil
		}
		return res, err
	}
	visited := 0
	err = fs.WalkDir(w.root.FS(), base, func(name string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if visited++; visited > MaxWalkEntries {
			res.Truncated = true
			return fs.SkipAll
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if gm != nil {
			target := path.Base(name)
			if gm.hasSlash() {
				target = relTo(base, name)
			}
			if !gm.match(target) {
				return nil
			}
		}
		if err := w.grepFile(ctx, re, name, &res); err != nil {
			if errors.Is(err, errStopWalk) {
				return fs.SkipAll
			}
			return err
		}
		return nil
	})
	if err != nil {
		return GrepResult{}, err
	}
	return res, nil
}

var errStopWalk = errors.New("match limit reached")

func (w *Workspace) grepFile(ctx context.Context, re *regexp.Regexp, rel string, res *GrepResult) error {
	f, err := w.openRead(rel)
	if err != nil {
		res.SkippedFiles++
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() > MaxGrepFileBytes {
		res.SkippedFiles++
		return nil
	}
	br := bufio.NewReaderSize(f, 64*1024)
	if sample, _ := br.Peek(BinarySniffBytes); looksBinary(sample) {
		res.SkippedFiles++
		return nil
	}
	var buf []byte
	for n := 1; ; n++ {
		line, _, err := readLine(br, 64*1024, buf)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			res.SkippedFiles++
			return nil
		}
		buf = line[:0]
		if !re.Match(line) {
			continue
		}
		if len(res.Matches) >= MaxListEntries {
			res.Truncated = true
			return errStopWalk
		}
		text := strings.ToValidUTF8(string(line), "\uFFFD")
		res.Matches = append(res.Matches, GrepMatch{Path: rel, Line: n, Text: truncateRunes(text, MaxGrepLineChars)})
		if n&1023 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

func (w *Workspace) requireDir(tool, param, rel string) error {
	st, err := w.root.Stat(rel)
	if err != nil {
		return w.fsError(tool, param, rel, err)
	}
	if !st.IsDir() {
		return invalid(tool, param, fmt.Sprintf("%s is not a directory; give a directory to search", rel))
	}
	return nil
}

// relTo returns name relative to base (both clean, slash-separated).
func relTo(base, name string) string {
	if base == "." {
		return name
	}
	return strings.TrimPrefix(name, base+"/")
}
