package podbot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/localclone"
	"github.com/podbot/podbot/termsafe"
)

// MaxSandboxBundle bounds the bundle a sandbox may send back (4 GiB).
const MaxSandboxBundle = 4 << 30

// Review is a local_clone sandbox opened from its host repository for
// podbot diff, log, fetch and apply.
type Review struct {
	// Info is what the sandbox's labels say.
	Info localclone.Info
	// Ignored are refs the sandbox's last bundle listed that podbot did
	// not take (names made terminal-safe).
	Ignored []string

	sio  cloneIO
	git  localclone.Git
	repo localclone.Repo
}

// OpenReview resolves the sandbox ref and checks that it was made from the
// repository at repoPath (or a directory inside it) and is running.
func OpenReview(ctx context.Context, conn *engine.Conn, ref, repoPath string, environ []string) (*Review, error) {
	c, err := ResolveContainer(ctx, conn, ref, false)
	if err != nil {
		return nil, err
	}
	// Execs run as the container's configured user: the agent's.
	return openReview(ctx, c, c.Running(), "start it with `podbot start "+c.Name+"`", engineCloneIO{conn: conn, id: c.ID}, repoPath, environ)
}

// openReview checks that sandbox c, reached through sio, was made from
// the repository at repoPath and is running (else the error's hint is
// stoppedHint), and opens it.
func openReview(ctx context.Context, c Container, running bool, stoppedHint string, sio cloneIO, repoPath string, environ []string) (*Review, error) {
	info, ok, err := localclone.ParseLabels(c.Name, c.Labels)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errNotLocalClone(c.Name)
	}
	g := localclone.Git{Environ: environ}
	repo, err := localclone.Open(ctx, g, repoPath)
	if err != nil {
		return nil, err
	}
	if repo.Top != info.Repo {
		return nil, &errdefs.RepoError{Op: "open sandbox", Repo: repo.Top, Reason: errdefs.ErrRefused,
			Msg:  "sandbox " + c.Name + " was made from " + termsafe.Line(info.Repo) + ", not from this repository",
			Hint: "run the command in " + termsafe.Line(info.Repo) + " or pass --repo " + termsafe.Line(info.Repo)}
	}
	if !running {
		return nil, &errdefs.ContainerError{Op: "review", Container: c.Name, Reason: errdefs.ErrRefused,
			Msg: "the sandbox is not running (state " + termsafe.Line(c.State) + ")", Hint: stoppedHint}
	}
	return &Review{Info: info, sio: sio, git: g, repo: repo}, nil
}

// export asks the sandbox for its bundle (with commit, after committing
// uncommitted work on its branch) and imports it into a quarantine under
// tmp. The bundle goes to a host file bounded by MaxSandboxBundle.
func (r *Review) export(ctx context.Context, tmp string, commit bool) (*localclone.Quarantine, error) {
	bpath := filepath.Join(tmp, "out.bundle")
	f, err := os.OpenFile(bpath, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "create", Path: bpath, Err: err}
	}
	defer f.Close()
	var errBuf bytes.Buffer
	lw := &capWriter{w: f, max: MaxSandboxBundle}
	code, err := r.sio.run(ctx, localclone.ExportCommand(r.Info, commit), nil, lw, &limitedBuffer{buf: &errBuf, max: maxStepOutput})
	if err != nil {
		return nil, err
	}
	if lw.over {
		return nil, &errdefs.RepoError{Op: "fetch", Repo: r.Info.Name, Reason: errdefs.ErrRefused,
			Msg: fmt.Sprintf("the sandbox's bundle is larger than %d bytes", int64(MaxSandboxBundle))}
	}
	if code != 0 {
		return nil, &errdefs.RepoError{Op: "export", Repo: r.Info.Name, Reason: errdefs.ErrExecFailed,
			Msg: fmt.Sprintf("bundling the sandbox's branch exited with status %d: %s", code, termsafe.Line(lastLines(errBuf.String(), 3)))}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, &errdefs.FilesystemError{Op: "seek", Path: bpath, Err: err}
	}
	q, err := r.repo.Import(ctx, r.git, f, []string{localclone.BranchRef(r.Info.Name), localclone.SnapshotRef},
		map[string]string{localclone.BranchRef(r.Info.Name): r.Info.Base}, tmp)
	if err != nil {
		return nil, err
	}
	r.Ignored = r.Ignored[:0]
	for _, n := range q.Ignored {
		r.Ignored = append(r.Ignored, termsafe.Line(n))
	}
	return q, nil
}

// withQuarantine runs fn with a fresh quarantine and removes it after.
func (r *Review) withQuarantine(ctx context.Context, commit bool, fn func(q *localclone.Quarantine) error) error {
	tmp, err := os.MkdirTemp("", "podbot-review-")
	if err != nil {
		return &errdefs.FilesystemError{Op: "create", Path: os.TempDir(), Err: err}
	}
	defer os.RemoveAll(tmp)
	q, err := r.export(ctx, tmp, commit)
	if err != nil {
		return err
	}
	return fn(q)
}

// DiffOptions select podbot diff's output.
type DiffOptions struct {
	// Stat prints a diffstat instead of the patch.
	Stat bool
}

// diffArgs are the flags every diff uses: no external diff, no textconv,
// no colour, no renames (stable file lists).
var diffArgs = []string{"diff", "--no-ext-diff", "--no-textconv", "--no-color", "--no-renames"}

// Diff writes the sandbox's changes (committed and uncommitted) against its
// base commit, with terminal escapes neutralised.
func (r *Review) Diff(ctx context.Context, w io.Writer, opts DiffOptions) error {
	return r.withQuarantine(ctx, false, func(q *localclone.Quarantine) error {
		args := append([]string(nil), diffArgs...)
		if opts.Stat {
			args = append(args, "--stat")
		}
		out, err := q.Output(ctx, r.git, append(args, r.Info.Base, q.Ref(localclone.SnapshotRef), "--")...)
		if err != nil {
			return err
		}
		_, err = io.WriteString(w, termsafe.String(string(out)))
		return err
	})
}

// DiffFile is one changed file of DiffJSON.
type DiffFile struct {
	// Path is the file's path (terminal-safe).
	Path string `json:"path"`
	// Additions and Deletions count lines; both -1 for a binary file.
	Additions int `json:"additions"`
	Deletions int `json:"deletions"`
}

// DiffResult is podbot diff --json.
type DiffResult struct {
	Sandbox string     `json:"sandbox"`
	Repo    string     `json:"repo"`
	Branch  string     `json:"branch"`
	Base    string     `json:"base"`
	Head    string     `json:"head"`
	Files   []DiffFile `json:"files"`
	Patch   string     `json:"patch"`
	Ignored []string   `json:"ignored_refs,omitempty"`
}

// DiffJSON returns the sandbox's changes as data.
func (r *Review) DiffJSON(ctx context.Context) (DiffResult, error) {
	res := DiffResult{Sandbox: r.Info.Name, Repo: r.Info.Repo, Branch: r.Info.Branch, Base: r.Info.Base, Files: []DiffFile{}}
	err := r.withQuarantine(ctx, false, func(q *localclone.Quarantine) error {
		res.Head = q.Tips[localclone.BranchRef(r.Info.Name)]
		snap := q.Ref(localclone.SnapshotRef)
		num, err := q.Output(ctx, r.git, append(append([]string(nil), diffArgs...), "--numstat", "-z", r.Info.Base, snap, "--")...)
		if err != nil {
			return err
		}
		for _, rec := range strings.Split(string(num), "\x00") {
			parts := strings.SplitN(rec, "\t", 3)
			if len(parts) != 3 {
				continue
			}
			add, err1 := strconv.Atoi(parts[0])
			del, err2 := strconv.Atoi(parts[1])
			if err1 != nil || err2 != nil {
				add, del = -1, -1
			}
			res.Files = append(res.Files, DiffFile{Path: termsafe.Line(parts[2]), Additions: add, Deletions: del})
		}
		patch, err := q.Output(ctx, r.git, append(append([]string(nil), diffArgs...), r.Info.Base, snap, "--")...)
		if err != nil {
			return err
		}
		res.Patch = termsafe.String(string(patch))
		return nil
	})
	res.Ignored = r.Ignored
	return res, err
}

// Log writes the commits on the sandbox's branch since its base, with
// terminal escapes neutralised.
func (r *Review) Log(ctx context.Context, w io.Writer) error {
	return r.withQuarantine(ctx, false, func(q *localclone.Quarantine) error {
		out, err := q.Output(ctx, r.git, "log", "--no-color", "--no-decorate", "--no-show-signature",
			r.Info.Base+".."+q.Ref(localclone.BranchRef(r.Info.Name)), "--")
		if err != nil {
			return err
		}
		_, err = io.WriteString(w, termsafe.String(string(out)))
		return err
	})
}

// FetchResult is what Fetch brought.
type FetchResult struct {
	// Ref is the host ref the branch went to (refs/heads/podbot/<name>).
	Ref string `json:"ref"`
	// Tip is its commit.
	Tip string `json:"tip"`
	// Commits counts the commits on it since the base.
	Commits int `json:"commits"`
	// Ignored are other refs the sandbox listed, not taken.
	Ignored []string `json:"ignored_refs,omitempty"`
}

// Fetch brings the sandbox's branch into the host repository as
// refs/heads/podbot/<name>. With snapshot, uncommitted work in the sandbox
// is first committed on its branch.
func (r *Review) Fetch(ctx context.Context, snapshot bool) (FetchResult, error) {
	res := FetchResult{Ref: localclone.BranchRef(r.Info.Name)}
	err := r.withQuarantine(ctx, snapshot, func(q *localclone.Quarantine) error {
		res.Tip = q.Tips[res.Ref]
		if err := q.FetchInto(ctx, r.git, r.repo, res.Ref, res.Ref); err != nil {
			return err
		}
		n, err := r.git.Run(ctx, r.repo.Top, nil, nil, "rev-list", "--count", r.Info.Base+".."+res.Tip)
		if err != nil {
			return err
		}
		res.Commits, _ = strconv.Atoi(strings.TrimSpace(string(n)))
		return nil
	})
	res.Ignored = r.Ignored
	return res, err
}

// ApplyMode is how Apply takes the branch: merge, squash or rebase.
type ApplyMode string

// Apply modes.
const (
	ApplyMerge  ApplyMode = "merge"
	ApplySquash ApplyMode = "squash"
	ApplyRebase ApplyMode = "rebase"
)

// Apply fetches the sandbox's branch, then merges it into the host's
// current branch (or squashes it into the index, or replays its commits
// on top with cherry-pick). It refuses a dirty host checkout or a
// detached HEAD; a conflict leaves git's ordinary conflict state and an
// ErrConflict error that says how to go back. Hooks do not run.
func (r *Review) Apply(ctx context.Context, mode ApplyMode) (FetchResult, error) {
	g, top := r.git, r.repo.Top
	if r.repo.Branch == "" {
		return FetchResult{}, &errdefs.RepoError{Op: "apply", Repo: top, Reason: errdefs.ErrRefused,
			Msg: "HEAD is detached", Hint: "check out the branch to apply to first"}
	}
	st, err := g.Run(ctx, top, nil, nil, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return FetchResult{}, err
	}
	if len(bytes.TrimSpace(st)) > 0 {
		return FetchResult{}, &errdefs.RepoError{Op: "apply", Repo: top, Reason: errdefs.ErrRefused,
			Msg: "the host checkout has uncommitted changes", Hint: "commit or stash them with git stash, then apply again"}
	}
	res, err := r.Fetch(ctx, false)
	if err != nil {
		return res, err
	}
	var args []string
	back := ""
	switch mode {
	case ApplySquash:
		args, back = []string{"merge", "--squash", "--no-verify", res.Ref}, "git reset --merge"
	case ApplyRebase:
		args, back = []string{"cherry-pick", "--allow-empty", r.Info.Base + ".." + res.Tip}, "git cherry-pick --abort"
	default:
		args, back = []string{"merge", "--no-edit", "--no-verify", "-m", "Merge " + localclone.Branch(r.Info.Name) + " (podbot sandbox)", res.Ref}, "git merge --abort"
	}
	if _, err := g.Run(ctx, top, nil, nil, args...); err != nil {
		if errors.Is(err, context.Canceled) {
			return res, err
		}
		return res, &errdefs.RepoError{Op: "apply", Repo: top, Reason: errdefs.ErrConflict,
			Msg:  string(mode) + " of " + localclone.Branch(r.Info.Name) + " stopped: " + err.Error(),
			Hint: "resolve the conflicts and commit, or go back with `" + back + "`"}
	}
	return res, nil
}

// Unfetched reports whether the sandbox holds work the host does not have:
// uncommitted changes, or a branch tip other than both its base and the
// host's refs/heads/podbot/<name>. A stopped sandbox is checked through
// the copy API (its loose branch ref; uncommitted changes cannot be seen).
func Unfetched(ctx context.Context, conn *engine.Conn, c Container, environ []string) (bool, string, error) {
	info, ok, err := localclone.ParseLabels(c.Name, c.Labels)
	if err != nil || !ok {
		return false, "", err
	}
	tip, dirty := "", false
	if c.Running() {
		var out, errBuf bytes.Buffer
		code, err := conn.Exec(ctx, c.ID, engine.ExecOptions{Cmd: localclone.StatusCommand(info),
			Stdout: &limitedBuffer{buf: &out, max: 4096}, Stderr: &limitedBuffer{buf: &errBuf, max: 4096}})
		if err != nil {
			return false, "", err
		}
		t, d, ok := localclone.ParseStatus(out.String())
		if code != 0 || !ok {
			return true, "its repository could not be checked", nil
		}
		tip, dirty = t, d
	} else {
		t, found := stoppedTip(ctx, conn, c.ID, info)
		if !found {
			return true, "its branch " + info.Branch + " could not be read from the stopped sandbox (podbot start " + c.Name + ", then podbot fetch " + c.Name + ")", nil
		}
		tip = t
	}
	if dirty {
		return true, "it has uncommitted changes (podbot fetch --snapshot " + c.Name + " takes them)", nil
	}
	if tip == "" || tip == info.Base {
		return false, "", nil
	}
	g := localclone.Git{Environ: environ}
	host, err := g.Run(ctx, info.Repo, nil, nil, "rev-parse", "-q", "--verify", localclone.BranchRef(info.Name))
	if err == nil && strings.TrimSpace(string(host)) == tip {
		return false, "", nil
	}
	return true, "its branch " + info.Branch + " has commits that were never fetched (podbot fetch " + c.Name + ")", nil
}

// capWriter writes to w until max bytes, then drops the rest and
// remembers it did.
type capWriter struct {
	w    io.Writer
	n    int64
	max  int64
	over bool
}

func (c *capWriter) Write(p []byte) (int, error) {
	if c.n+int64(len(p)) > c.max {
		c.over = true
		return len(p), nil
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ForgetLocalClone drops the host's refs/podbot/base/<name> of a removed
// local_clone sandbox c (a container, or a Pod as KubeContainer shows it),
// if it still names the sandbox's base; best effort. Remove does it for a
// container.
func ForgetLocalClone(ctx context.Context, c Container, environ []string) {
	info, ok, err := localclone.ParseLabels(c.Name, c.Labels)
	if err != nil || !ok {
		return
	}
	g := localclone.Git{Environ: environ}
	_, _ = g.Run(ctx, info.Repo, nil, nil, "update-ref", "-d", localclone.BaseRef(info.Name), info.Base)
}

// stoppedTip reads the branch tip of a stopped sandbox through the copy
// API: the loose ref, else its line in packed-refs (both bounded).
func stoppedTip(ctx context.Context, conn *engine.Conn, id string, info localclone.Info) (string, bool) {
	gitDir := path.Join(info.Dir, ".git")
	if data, err := conn.ReadFile(ctx, id, path.Join(gitDir, "refs", "heads", info.Branch), 256); err == nil {
		return localclone.ParseLooseRef(string(data))
	}
	data, err := conn.ReadFile(ctx, id, path.Join(gitDir, "packed-refs"), 4<<20)
	if err != nil {
		return "", false
	}
	return localclone.FindPackedRef(string(data), localclone.BranchRef(info.Name))
}
