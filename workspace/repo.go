package workspace

import (
	"strconv"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// Length limits GitHub enforces on repository references.
const (
	// MaxOwnerLen is the longest GitHub user or organisation name.
	MaxOwnerLen = 39
	// MaxRepoNameLen is the longest GitHub repository name.
	MaxRepoNameLen = 100
)

// Repo is a GitHub repository reference.
type Repo struct {
	// Owner is the user or organisation.
	Owner string
	// Name is the repository name.
	Name string
}

// String returns owner/name.
func (r Repo) String() string { return r.Owner + "/" + r.Name }

// ParseRepo parses exactly owner/name. The owner is 1-39 letters, digits and
// single hyphens, neither starting nor ending with one; the name is 1-100
// letters, digits, '.', '_' or '-', and not "." or "..". A trailing .git is
// refused with a hint, since the clone URL adds it. Errors are
// *errdefs.ConfigError for key "repo".
func ParseRepo(s string) (Repo, error) {
	owner, name, ok := strings.Cut(s, "/")
	if !ok || strings.Contains(name, "/") {
		return Repo{}, repoError(s, "must be exactly OWNER/NAME, for example octocat/hello-world")
	}
	if err := checkOwner(owner); err != "" {
		return Repo{}, repoError(s, "owner "+err)
	}
	if err := checkName(name); err != "" {
		return Repo{}, repoError(s, "name "+err)
	}
	return Repo{Owner: owner, Name: name}, nil
}

func repoError(s, msg string) error {
	return &errdefs.ConfigError{Key: "repo", Reason: errdefs.ErrInvalidValue,
		Msg: "repository " + quote(s) + ": " + msg}
}

// checkOwner returns what is wrong with a GitHub owner name, or "".
func checkOwner(o string) string {
	switch {
	case o == "":
		return "is empty"
	case len(o) > MaxOwnerLen:
		return "is longer than 39 characters"
	case o[0] == '-' || o[len(o)-1] == '-':
		return "may not start or end with '-'"
	case strings.Contains(o, "--"):
		return "may not contain consecutive hyphens"
	}
	for i := 0; i < len(o); i++ {
		if !isAlnum(o[i]) && o[i] != '-' {
			return "may contain only letters, digits and single hyphens"
		}
	}
	return ""
}

// checkName returns what is wrong with a GitHub repository name, or "".
func checkName(n string) string {
	switch {
	case n == "":
		return "is empty"
	case len(n) > MaxRepoNameLen:
		return "is longer than 100 characters"
	case n == "." || n == "..":
		return "may not be . or .."
	case strings.HasSuffix(strings.ToLower(n), ".git"):
		return "ends in .git; give the name without it"
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return "may contain only letters, digits, '.', '_' and '-'"
		}
	}
	return ""
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// quote renders untrusted input safely inside an error message.
func quote(s string) string {
	const max = 200
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.Quote(s)
}
