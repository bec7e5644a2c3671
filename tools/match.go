package tools

import (
	"fmt"
	"path"
	"strings"
)

// globMatcher matches slash-separated relative paths against a pattern of
// path.Match segments, where a "**" segment matches any number of segments.
type globMatcher struct {
	segs []string
}

func compileGlob(tool, param, pattern string) (globMatcher, error) {
	if pattern == "" {
		return globMatcher{}, invalid(tool, param, "is empty; give a pattern such as \"**/*.go\"")
	}
	if len(pattern) > MaxPatternChars {
		return globMatcher{}, invalid(tool, param, fmt.Sprintf("is %d characters; keep it at most %d", len(pattern), MaxPatternChars))
	}
	if strings.HasPrefix(pattern, "/") {
		return globMatcher{}, refused(tool, param, fmt.Sprintf("%q is absolute; give a pattern relative to the search path", pattern))
	}
	var segs []string
	for s := range strings.SplitSeq(pattern, "/") {
		switch s {
		case "", ".":
			continue
		case "..":
			return globMatcher{}, refused(tool, param, fmt.Sprintf("%q contains \"..\"; patterns may not leave the search path", pattern))
		case "**":
		default:
			if _, err := path.Match(s, ""); err != nil {
				return globMatcher{}, invalid(tool, param, fmt.Sprintf("%q is not a valid pattern (%v); use *, ?, [a-z] and **", pattern, err))
			}
		}
		segs = append(segs, s)
	}
	if len(segs) == 0 {
		return globMatcher{}, invalid(tool, param, fmt.Sprintf("%q matches nothing; give a pattern such as \"*.txt\"", pattern))
	}
	return globMatcher{segs: segs}, nil
}

// hasSlash reports whether the pattern names directories (more than one segment).
func (g globMatcher) hasSlash() bool { return len(g.segs) > 1 }

// match reports whether rel (slash-separated) matches.
func (g globMatcher) match(rel string) bool {
	return matchSegs(g.segs, strings.Split(rel, "/"))
}

func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			for i := 0; i <= len(name); i++ {
				if matchSegs(rest, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
