package workspace

import (
	"strings"
	"unicode/utf8"

	"github.com/podbot/podbot/errdefs"
)

// MaxBranchLen bounds a branch name; git has no limit but the name becomes a
// file under .git/refs/heads.
const MaxBranchLen = 255

// ValidateBranch checks a branch name with the rules of
// git check-ref-format --branch: no component starting with '.' or ending in
// ".lock"; no "..", "@{", "//", backslash, space, control characters or any
// of ~ ^ : ? * [; not starting or ending with '/', not ending with '.', not
// starting with '-'. podbot is stricter than git in refusing "@" and HEAD
// (which git reads as HEAD shorthands), invalid UTF-8, and names longer than
// MaxBranchLen bytes. Errors are *errdefs.ConfigError for key "branch".
func ValidateBranch(name string) error {
	if msg := branchProblem(name); msg != "" {
		return &errdefs.ConfigError{Key: "branch", Reason: errdefs.ErrInvalidValue,
			Msg: "branch " + quote(name) + " " + msg + " (git check-ref-format rules)"}
	}
	return nil
}

func branchProblem(name string) string {
	switch {
	case name == "":
		return "is empty"
	case len(name) > MaxBranchLen:
		return "is longer than 255 bytes"
	case !utf8.ValidString(name):
		return "is not valid UTF-8"
	case name == "@":
		return "may not be @"
	case name == "HEAD":
		return "may not be HEAD"
	case name[0] == '-':
		return "may not start with '-'"
	case name[0] == '/' || name[len(name)-1] == '/':
		return "may not start or end with '/'"
	case name[len(name)-1] == '.':
		return "may not end with '.'"
	case strings.Contains(name, ".."):
		return "may not contain '..'"
	case strings.Contains(name, "@{"):
		return "may not contain '@{'"
	case strings.Contains(name, "//"):
		return "may not contain '//'"
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c == 0x7f {
			return "may not contain control characters"
		}
		if strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return "may not contain space or any of ~ ^ : ? * [ \\"
		}
	}
	for _, comp := range strings.Split(name, "/") {
		if strings.HasPrefix(comp, ".") {
			return "may not have a component starting with '.'"
		}
		if strings.HasSuffix(comp, ".lock") {
			return "may not have a component ending in .lock"
		}
	}
	return ""
}
