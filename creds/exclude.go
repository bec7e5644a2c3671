package creds

import (
	"path"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// DefaultExcludes returns the exclude patterns used when BuildOptions.Exclude
// is nil. They leave out logs, caches, session transcripts and prompt
// history, which can grow to gigabytes and are not needed to log in, and the
// IDE lock files that hold tokens for editor integrations on the host.
//
// Patterns follow the creds.exclude rules: a pattern without "/" is matched
// against every file and directory name at any depth ("*.log", "cache"); a
// pattern with "/" is matched against the whole path below the home
// directory (".claude/projects"). Matching uses path.Match syntax, and an
// excluded directory excludes everything below it.
func DefaultExcludes() []string {
	return []string{
		// logs
		"*.log", "log", "logs",
		// caches and telemetry state
		"cache", "caches", ".cache", "statsig",
		// Claude Code: transcripts, per-session state, history, IDE locks
		".claude/projects", ".claude/todos", ".claude/shell-snapshots", ".claude/debug",
		".claude/file-history", ".claude/history.jsonl", ".claude/ide",
		// Codex: transcripts and history
		".codex/sessions", ".codex/archived_sessions", ".codex/history.jsonl",
	}
}

// excluder decides which paths stay out of the archive.
type excluder struct {
	names []string // patterns matched against one name
	paths []string // patterns matched against the path below home
}

// newExcluder validates patterns; a bad one is a creds.exclude config error.
func newExcluder(patterns []string) (*excluder, error) {
	e := &excluder{}
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		clean := strings.Trim(p, "/")
		if _, err := path.Match(clean, ""); err != nil || clean == "" {
			return nil, &errdefs.ConfigError{Key: "creds.exclude", Reason: errdefs.ErrInvalidValue,
				Msg: "pattern " + quote(p) + " is not a valid glob (path.Match syntax, e.g. \"*.log\" or \".claude/projects\")", Err: err}
		}
		if strings.Contains(clean, "/") {
			e.paths = append(e.paths, clean)
		} else {
			e.names = append(e.names, clean)
		}
	}
	return e, nil
}

// excluded reports whether rel (slash-separated, below home) is left out.
// Ancestors are checked by the walk, which skips excluded directories.
func (e *excluder) excluded(rel string) bool {
	name := path.Base(rel)
	for _, p := range e.names {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	for _, p := range e.paths {
		if ok, _ := path.Match(p, rel); ok {
			return true
		}
	}
	return false
}

func quote(s string) string { return "\"" + s + "\"" }

// Excluded reports whether rel (slash-separated, below home) or one of
// its ancestors is left out of the archive by patterns (nil means
// DefaultExcludes()). A bad pattern is a creds.exclude config error.
func Excluded(patterns []string, rel string) (bool, error) {
	if patterns == nil {
		patterns = DefaultExcludes()
	}
	e, err := newExcluder(patterns)
	if err != nil {
		return false, err
	}
	for p := path.Clean(rel); p != "." && p != "/"; p = path.Dir(p) {
		if e.excluded(p) {
			return true, nil
		}
	}
	return false, nil
}
