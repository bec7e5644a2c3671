package localclone

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// Repo is a host repository checked for copying into a sandbox.
type Repo struct {
	// Top is the canonical path of the work tree's top directory.
	Top string
	// CommonDir is the absolute git directory shared by its worktrees.
	CommonDir string
	// ObjectsDir is the absolute object directory.
	ObjectsDir string
	// Branch is the checked-out branch (refs/heads/...), empty when HEAD
	// is detached.
	Branch string
	// ObjectFormat is the hash the repository uses (sha1 or sha256).
	ObjectFormat string
}

// badRepo is the error for a path that cannot be a local_clone source.
func badRepo(path, msg, hint string) error {
	return &errdefs.RepoError{Op: "open repository", Repo: path, Reason: errdefs.ErrInvalidValue, Msg: msg, Hint: hint}
}

// Open checks that path is the work tree of a non-bare git repository with
// at least one commit and returns it. A path inside a work tree selects
// that work tree.
func Open(ctx context.Context, g Git, path string) (Repo, error) {
	if !filepath.IsAbs(path) {
		return Repo{}, badRepo(path, "is not an absolute path", "")
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Repo{}, badRepo(path, "does not exist or cannot be read", "give the path of a git checkout")
	}
	if !fi.IsDir() {
		return Repo{}, badRepo(path, "is not a directory", "give the path of a git checkout")
	}
	if r, ok := openFast(ctx, g, path); ok {
		return r, nil
	}
	out, err := g.Run(ctx, path, nil, nil, "rev-parse", "--is-bare-repository", "--absolute-git-dir", "--git-common-dir")
	if err != nil {
		return Repo{}, badRepo(path, "is not a git repository", "run git init there, or give the path of a git checkout")
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 {
		return Repo{}, badRepo(path, "git rev-parse gave an unexpected answer", "")
	}
	if lines[0] == "true" {
		return Repo{}, badRepo(path, "is a bare repository: it has no checkout to start from", "clone it (git clone "+path+" DIR) and give DIR")
	}
	top, err := g.line(ctx, path, "rev-parse", "--show-toplevel")
	if err != nil || top == "" {
		return Repo{}, badRepo(path, "is inside a git directory, not a work tree", "give the path of a git checkout")
	}
	if _, err := g.line(ctx, top, "rev-parse", "--verify", "-q", "HEAD^{commit}"); err != nil {
		return Repo{}, badRepo(top, "has no commits yet", "commit something first (git commit)")
	}
	format, err := g.line(ctx, path, "rev-parse", "--show-object-format")
	if err != nil {
		return Repo{}, err
	}
	branch := ""
	if b, err := g.line(ctx, top, "symbolic-ref", "-q", "HEAD"); err == nil {
		branch = b
	}
	return resolveRepo(path, top, lines[2], branch, format)
}

// openFast asks git everything Open needs in one rev-parse; ok is false
// when that fails or answers oddly (a bare repository, no work tree, no
// commit yet), and Open then asks step by step to say what is wrong.
func openFast(ctx context.Context, g Git, path string) (Repo, bool) {
	out, err := g.Run(ctx, path, nil, nil, "rev-parse", "--is-bare-repository", "--git-common-dir", "--show-object-format",
		"--show-toplevel", "HEAD^{commit}", "--symbolic-full-name", "HEAD")
	if err != nil {
		return Repo{}, false
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 6 || lines[0] != "false" || lines[3] == "" || !isObjectID(lines[4]) {
		return Repo{}, false
	}
	branch := lines[5]
	if !strings.HasPrefix(branch, "refs/heads/") {
		branch = ""
	}
	r, err := resolveRepo(path, lines[3], lines[1], branch, lines[2])
	return r, err == nil
}

// resolveRepo makes the Repo from rev-parse's answers: top and the common
// git directory (relative to path when not absolute) resolved through
// symlinks.
func resolveRepo(path, top, common, branch, format string) (Repo, error) {
	top, err := filepath.EvalSymlinks(top)
	if err != nil {
		return Repo{}, badRepo(path, "its top directory cannot be resolved", "")
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(path, common)
	}
	if common, err = filepath.EvalSymlinks(common); err != nil {
		return Repo{}, badRepo(path, "its git directory cannot be resolved", "")
	}
	if format != "sha1" && format != "sha256" {
		return Repo{}, badRepo(path, "uses object format "+quote(format)+", which podbot does not know", "")
	}
	return Repo{Top: top, CommonDir: common, ObjectsDir: filepath.Join(common, "objects"), Branch: branch, ObjectFormat: format}, nil
}

// Resolve returns the commit id ref names in r. An empty ref is HEAD, which
// must then be on a branch: a detached HEAD needs an explicit base.
func (r Repo) Resolve(ctx context.Context, g Git, ref string) (string, error) {
	if ref == "" {
		if r.Branch == "" {
			return "", badRepo(r.Top, "HEAD is detached: there is no branch to start from", "check out a branch, or pass --base REF")
		}
		ref = "HEAD"
	}
	if strings.HasPrefix(ref, "-") || strings.ContainsAny(ref, "\x00\n") {
		return "", badRepo(r.Top, "base "+quote(ref)+" is not a revision", "give a branch, tag or commit id")
	}
	id, err := g.line(ctx, r.Top, "rev-parse", "--verify", "-q", "--end-of-options", ref+"^{commit}")
	if err != nil || !isObjectID(id) {
		return "", badRepo(r.Top, "base "+quote(ref)+" names no commit", "give a branch, tag or commit id")
	}
	return id, nil
}

// DirtyCommit records the work tree's uncommitted changes (tracked and
// untracked, not ignored) as one commit on top of parent, without touching
// the repository's index or refs. It returns parent when nothing differs.
func (r Repo) DirtyCommit(ctx context.Context, g Git, parent, tmpDir string) (string, error) {
	idx := filepath.Join(tmpDir, "index")
	src, err := g.line(ctx, r.Top, "rev-parse", "--git-path", "index")
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(src) {
		src = filepath.Join(r.Top, src)
	}
	if err := copyFile(src, idx); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", &errdefs.FilesystemError{Op: "copy index", Path: src, Err: err}
	}
	env := []string{"GIT_INDEX_FILE=" + idx}
	if _, err := g.Run(ctx, r.Top, nil, env, "add", "-A", "--", "."); err != nil {
		return "", err
	}
	tree, err := g.Run(ctx, r.Top, nil, env, "write-tree")
	if err != nil {
		return "", err
	}
	t := strings.TrimSpace(string(tree))
	pt, err := g.line(ctx, r.Top, "rev-parse", parent+"^{tree}")
	if err != nil {
		return "", err
	}
	if t == pt {
		return parent, nil
	}
	id := []string{"GIT_AUTHOR_NAME=podbot", "GIT_AUTHOR_EMAIL=podbot@localhost", "GIT_COMMITTER_NAME=podbot", "GIT_COMMITTER_EMAIL=podbot@localhost"}
	c, err := g.Run(ctx, r.Top, nil, id, "commit-tree", "-p", parent, "-m", "podbot: uncommitted changes from the host", t)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(c)), nil
}

// copyFile copies src to dst (mode 0600).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// isObjectID reports whether s is a full SHA-1 or SHA-256 object id in
// lower-case hex.
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
