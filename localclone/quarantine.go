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
	for _, p := range h.Prerequisites {
		if t, err := g.line(ctx, r.Top, "cat-file", "-t", p); err != nil || t != "commit" {
			return nil, refused("needs commit " + p + ", which the host repository does not have")
		}
	}
	format, err := g.line(ctx, r.Top, "rev-parse", "--show-object-format")
	if err != nil {
		return nil, err
	}
	if _, err := g.Run(ctx, tmpDir, nil, nil, "init", "-q", "--bare", "--template=", "--object-format="+format, q.Dir); err != nil {
		return nil, err
	}
	alt := filepath.Join(q.Dir, "objects", "info")
	if err := os.MkdirAll(alt, 0o700); err != nil {
		return nil, &errdefs.FilesystemError{Op: "create", Path: alt, Err: err}
	}
	if err := os.WriteFile(filepath.Join(alt, "alternates"), []byte(r.ObjectsDir+"\n"), 0o600); err != nil {
		return nil, &errdefs.FilesystemError{Op: "write", Path: alt, Err: err}
	}
	if _, err := g.Run(ctx, tmpDir, br, nil, "--git-dir="+q.Dir, "index-pack", "--stdin", "--strict", "--fix-thin"); err != nil {
		return nil, refused("failed git's object checks: " + err.Error())
	}
	args := []string{"--git-dir=" + q.Dir, "rev-list", "--objects", "--quiet"}
	for _, w := range want {
		id := q.Tips[w]
		if t, err := g.line(ctx, tmpDir, "--git-dir="+q.Dir, "cat-file", "-t", id); err != nil || t != "commit" {
			return nil, refused("names " + w + " at " + id + ", which is not a commit it holds")
		}
		args = append(args, id)
	}
	args = append(args, "--not")
	args = append(args, h.Prerequisites...)
	for _, id := range defaults {
		args = append(args, id)
	}
	if _, err := g.Run(ctx, tmpDir, nil, nil, args...); err != nil {
		return nil, refused("is not complete: " + err.Error())
	}
	for _, w := range want {
		if _, err := g.Run(ctx, tmpDir, nil, nil, "--git-dir="+q.Dir, "update-ref", quarantineRef(w), q.Tips[w]); err != nil {
			return nil, err
		}
	}
	return q, nil
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
