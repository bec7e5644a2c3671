package localclone

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// Quarantine is a temporary bare repository that holds what a sandbox
// sent, checked, apart from the host repository: its object directory
// borrows the host's objects (alternates) and its refs are only the ones
// podbot asked for. Nothing is written into the host repository until
// Fetch.
type Quarantine struct {
	// Dir is the quarantine's git directory.
	Dir string
	// Tips maps each ref podbot asked for to the commit the sandbox sent.
	Tips map[string]string
	// Ignored are the other refs the bundle listed (untrusted names).
	Ignored []string
}

// quarantineRef is where a wanted ref is kept inside the quarantine.
func quarantineRef(name string) string {
	return "refs/sandbox/" + strings.TrimPrefix(strings.TrimPrefix(name, "refs/heads/"), "refs/")
}

// Import reads a bundle the sandbox made and checks it into a quarantine
// under tmpDir: the header is parsed with bounds; each ref in want must be
// present and name a commit; every other ref is ignored; every
// prerequisite must be a commit the host has; the pack is indexed with
// index-pack --strict (fsck of every object and its links); and the tips
// must be fully connected. A wanted ref that defaults names (a commit the
// host has) may be absent: git leaves out a ref whose tip is a
// prerequisite, such as a branch with no new commits. Any failure is an
// errdefs.ErrRefused RepoError saying why.
func (r Repo) Import(ctx context.Context, g Git, bundle io.Reader, want []string, defaults map[string]string, tmpDir string) (*Quarantine, error) {
	br := bufio.NewReaderSize(bundle, 64<<10)
	h, err := ParseHeader(br)
	if err != nil {
		return nil, err
	}
	q := &Quarantine{Dir: filepath.Join(tmpDir, "quarantine.git"), Tips: map[string]string{}}
	wanted := map[string]bool{}
	for _, w := range want {
		wanted[w] = true
		id, ok := h.Lookup(w)
		if !ok && defaults[w] != "" {
			id, ok = defaults[w], true
		}
		if !ok {
			return nil, refused("does not hold " + w + " (was the sandbox's branch deleted or renamed?)")
		}
		q.Tips[w] = id
	}
	for _, ref := range h.Refs {
		if !wanted[ref.Name] {
			q.Ignored = append(q.Ignored, ref.Name)
		}
	}
	if len(h.Prerequisites) > 0 {
		if err := checkCommits(ctx, g, r.Top, nil, h.Prerequisites); err != nil {
			return nil, refused("needs commit " + err.Error() + ", which the host repository does not have")
		}
	}
	format := r.ObjectFormat
	if format == "" {
		if format, err = g.line(ctx, r.Top, "rev-parse", "--show-object-format"); err != nil {
			return nil, err
		}
	}
	if err := makeQuarantine(q.Dir, r.ObjectsDir, format); err != nil {
		return nil, err
	}
	if _, err := g.Run(ctx, tmpDir, br, nil, "--git-dir="+q.Dir, "index-pack", "--stdin", "--strict", "--fix-thin"); err != nil {
		return nil, refused("failed git's object checks: " + err.Error())
	}
	tips := make([]string, 0, len(want))
	for _, w := range want {
		tips = append(tips, q.Tips[w])
	}
	if err := checkCommits(ctx, g, tmpDir, []string{"--git-dir=" + q.Dir}, tips); err != nil {
		name := ""
		for _, w := range want {
			if q.Tips[w] == err.Error() {
				name = w
				break
			}
		}
		return nil, refused("names " + name + " at " + err.Error() + ", which is not a commit it holds")
	}
	args := []string{"--git-dir=" + q.Dir, "rev-list", "--objects", "--quiet"}
	args = append(args, tips...)
	args = append(args, "--not")
	args = append(args, h.Prerequisites...)
	for _, id := range defaults {
		args = append(args, id)
	}
	if _, err := g.Run(ctx, tmpDir, nil, nil, args...); err != nil {
		return nil, refused("is not complete: " + err.Error())
	}
	for _, w := range want {
		if err := writeLooseRef(q.Dir, quarantineRef(w), q.Tips[w]); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// missingCommit is the id checkCommits found not to be a commit.
type missingCommit string

func (m missingCommit) Error() string { return string(m) }

// checkCommits checks, with one git cat-file --batch-check, that every id
// in ids is a commit in the repository git runs in (gitArgs select it);
// the error for the first that is not is its id (a missingCommit), or
// git's own error.
func checkCommits(ctx context.Context, g Git, dir string, gitArgs, ids []string) error {
	var in strings.Builder
	for _, id := range ids {
		if !isObjectID(id) {
			return missingCommit(id)
		}
		in.WriteString(id + "\n")
	}
	out, err := g.Run(ctx, dir, strings.NewReader(in.String()), nil, append(gitArgs, "cat-file", "--batch-check=%(objecttype)")...)
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	for i, id := range ids {
		if i >= len(lines) || lines[i] != "commit" {
			return missingCommit(id)
		}
	}
	return nil
}

// makeQuarantine lays out an empty bare repository at dir, as git init
// --bare --template= would, whose object store borrows objectsDir: the
// config podbot writes holds nothing but the format.
func makeQuarantine(dir, objectsDir, format string) error {
	for _, d := range []string{filepath.Join(dir, "objects", "info"), filepath.Join(dir, "objects", "pack"), filepath.Join(dir, "refs", "heads"), filepath.Join(dir, "refs", "tags")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return &errdefs.FilesystemError{Op: "create", Path: d, Err: err}
		}
	}
	config := "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n"
	if format == "sha256" {
		config = "[core]\n\trepositoryformatversion = 1\n\tfilemode = true\n\tbare = true\n[extensions]\n\tobjectformat = sha256\n"
	} else if format != "sha1" {
		return badRepo(dir, "object format "+quote(format)+" is not one podbot knows", "")
	}
	files := []struct{ path, data string }{
		{filepath.Join(dir, "HEAD"), "ref: refs/heads/main\n"},
		{filepath.Join(dir, "config"), config},
		{filepath.Join(dir, "objects", "info", "alternates"), objectsDir + "\n"},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, []byte(f.data), 0o600); err != nil {
			return &errdefs.FilesystemError{Op: "write", Path: f.path, Err: err}
		}
	}
	return nil
}

// writeLooseRef writes the ref name (one of podbot's own quarantine names)
// in the quarantine at dir as a loose ref holding id.
func writeLooseRef(dir, name, id string) error {
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return &errdefs.FilesystemError{Op: "create", Path: p, Err: err}
	}
	if err := os.WriteFile(p, []byte(id+"\n"), 0o600); err != nil {
		return &errdefs.FilesystemError{Op: "write", Path: p, Err: err}
	}
	return nil
}

// Output runs git in the quarantine and returns its output.
func (q *Quarantine) Output(ctx context.Context, g Git, args ...string) ([]byte, error) {
	return g.Run(ctx, filepath.Dir(q.Dir), nil, nil, append([]string{"--git-dir=" + q.Dir}, args...)...)
}

// Ref returns the quarantine's name for the wanted ref name.
func (q *Quarantine) Ref(name string) string { return quarantineRef(name) }

// FetchInto copies the quarantined ref name into the host repository as
// dst (forced: dst is podbot's own branch for this sandbox), with object
// checks on, no tags, no FETCH_HEAD and no submodules.
func (q *Quarantine) FetchInto(ctx context.Context, g Git, r Repo, name, dst string) error {
	_, err := g.Run(ctx, r.Top, nil, nil, "-c", "transfer.fsckObjects=true", "-c", "fetch.fsckObjects=true",
		"fetch", "-q", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--no-auto-gc",
		q.Dir, "+"+quarantineRef(name)+":"+dst)
	return err
}
