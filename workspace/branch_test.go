package workspace

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

var branchCases = []struct {
	name string
	ok   bool
}{
	{"main", true},
	{"feature/login", true},
	{"release-1.2", true},
	{"fix_bug#12", true},
	{"a/b/c", true},
	{"v1.0", true},
	{"héllo", true},
	{"foo@bar", true},
	{"foo.lockx", true},
	{"", false},
	{"@", false},
	{"HEAD", false},
	{"-main", false},
	{"/main", false},
	{"main/", false},
	{"main.", false},
	{"a..b", false},
	{"a//b", false},
	{"a@{b", false},
	{"a b", false},
	{"a\tb", false},
	{"a\x7fb", false},
	{"a~1", false},
	{"a^2", false},
	{"a:b", false},
	{"a?b", false},
	{"a*b", false},
	{"a[b", false},
	{"a\\b", false},
	{".hidden", false},
	{"a/.hidden", false},
	{"a.lock", false},
	{"a.lock/b", false},
	{"a/b.lock", false},
	{"\xff", false},
	{strings.Repeat("a", 256), false},
}

func TestValidateBranch(t *testing.T) {
	for _, tt := range branchCases {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateBranch(tt.name)
			if tt.ok {
				if err != nil {
					t.Fatalf("ValidateBranch(%q) = %v", tt.name, err)
				}
				return
			}
			var ce *errdefs.ConfigError
			if !errors.As(err, &ce) || ce.Key != "branch" || !errors.Is(err, errdefs.ErrInvalidValue) {
				t.Fatalf("ValidateBranch(%q) = %v, want ConfigError branch", tt.name, err)
			}
		})
	}
}

// TestValidateBranchAgreesWithGit checks the table against the real
// git check-ref-format --branch when git is installed.
func TestValidateBranchAgreesWithGit(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed; the table above still runs")
	}
	dir := t.TempDir() // outside any repository, so git does not expand @ or @{-1}
	for _, tt := range branchCases {
		if tt.name == "" || strings.ContainsRune(tt.name, 0) || len(tt.name) > 255 || tt.name == "\xff" || tt.name == "HEAD" || tt.name == "@" {
			continue // podbot-only rules or not passable as an argument
		}
		cmd := exec.Command(gitPath, "check-ref-format", "--branch", tt.name)
		cmd.Dir = dir
		gitOK := cmd.Run() == nil
		if gitOK != (ValidateBranch(tt.name) == nil) {
			t.Errorf("%q: git says ok=%v, ValidateBranch says ok=%v", tt.name, gitOK, ValidateBranch(tt.name) == nil)
		}
	}
}

func FuzzValidateBranch(f *testing.F) {
	for _, c := range branchCases {
		f.Add(c.name)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := ValidateBranch(s)
		if err != nil {
			var ce *errdefs.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if s == "" || strings.HasPrefix(s, "-") || strings.Contains(s, "..") || strings.ContainsAny(s, " ~^:?*[\\\x00\n") ||
			strings.HasPrefix(s, "/") || strings.HasSuffix(s, ".lock") || strings.Contains(s, "@{") {
			t.Fatalf("accepted invalid branch %q", s)
		}
		// A valid branch can never be mistaken for an option or a path escape.
		argv, err := CloneCommands(Repo{"o", "r"}, s, "/work", "")
		if err != nil || argv[0][5] != s {
			t.Fatalf("CloneCommands with valid branch %q: %v %v", s, argv, err)
		}
	})
}
