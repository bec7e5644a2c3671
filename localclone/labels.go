package localclone

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// Labels a local_clone sandbox carries.
const (
	// LabelRepo is the canonical host path of the repository it was copied from.
	LabelRepo = "podbot.localclone.repo"
	// LabelBase is the commit its branch started at.
	LabelBase = "podbot.localclone.base"
	// LabelBranch is its branch, podbot/<sandbox name>.
	LabelBranch = "podbot.localclone.branch"
	// LabelDir is the repository's directory inside the sandbox.
	LabelDir = "podbot.localclone.dir"
)

// BranchPrefix starts every sandbox branch name.
const BranchPrefix = "podbot/"

// sandboxName is what a sandbox (container) name may look like.
var sandboxName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$`)

// Branch returns the branch of sandbox name: podbot/<name>.
func Branch(name string) string { return BranchPrefix + name }

// BranchRef is Branch as a full ref, refs/heads/podbot/<name>.
func BranchRef(name string) string { return "refs/heads/" + Branch(name) }

// BaseRef is the host ref that keeps a sandbox's base commit alive:
// refs/podbot/base/<name>.
func BaseRef(name string) string { return "refs/podbot/base/" + name }

// Info is what a sandbox's labels say about its local clone.
type Info struct {
	// Name is the sandbox's name.
	Name string `json:"name"`
	// Repo is the host repository path.
	Repo string `json:"repo"`
	// Base is the commit the branch started at.
	Base string `json:"base"`
	// Branch is podbot/<name>.
	Branch string `json:"branch"`
	// Dir is the repository's directory inside the sandbox.
	Dir string `json:"dir"`
}

// Labels returns the labels that record info.
func (i Info) Labels() map[string]string {
	return map[string]string{LabelRepo: i.Repo, LabelBase: i.Base, LabelBranch: i.Branch, LabelDir: i.Dir}
}

// ParseLabels reads a sandbox's local-clone labels. ok is false when the
// sandbox has none (it was not made from a local repository). Labels that
// are present but malformed are an error: podbot wrote them, so a bad one
// means the container was not made by this podbot.
func ParseLabels(name string, labels map[string]string) (info Info, ok bool, err error) {
	repo, has := labels[LabelRepo]
	if !has {
		return Info{}, false, nil
	}
	bad := func(what string) error {
		return &errdefs.RepoError{Op: "read labels", Repo: quote(name), Reason: errdefs.ErrInvalidValue,
			Msg: "the sandbox's " + what + " label is malformed", Hint: "it was not made by podbot create/run/host --repo PATH"}
	}
	info = Info{Name: name, Repo: repo, Base: labels[LabelBase], Branch: labels[LabelBranch], Dir: labels[LabelDir]}
	switch {
	case !sandboxName.MatchString(name):
		return Info{}, false, bad("name")
	case repo == "" || len(repo) > 4096 || !filepath.IsAbs(repo) || filepath.Clean(repo) != repo || strings.ContainsAny(repo, "\x00\n"):
		return Info{}, false, bad(LabelRepo)
	case !isObjectID(info.Base):
		return Info{}, false, bad(LabelBase)
	case info.Branch != Branch(name):
		return Info{}, false, bad(LabelBranch)
	case !validDir(info.Dir):
		return Info{}, false, bad(LabelDir)
	}
	return info, true, nil
}

// validDir reports whether d is a clean absolute container path other than /.
func validDir(d string) bool {
	return d != "" && d != "/" && len(d) <= 4096 && strings.HasPrefix(d, "/") && filepath.Clean(d) == d && !strings.ContainsAny(d, "\x00\n")
}

// DirName is the directory name the copy gets under the base directory:
// the host directory's name, reduced to letters, digits, '.', '_' and '-'.
func DirName(top string) string {
	base := filepath.Base(top)
	var b strings.Builder
	for _, r := range base {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := strings.TrimLeft(b.String(), ".")
	if s == "" || len(s) > 100 {
		return "repo"
	}
	return s
}

// quote renders untrusted text safely in a message.
func quote(s string) string {
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return strconv.Quote(s)
}
