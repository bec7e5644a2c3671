package podbot

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/localclone"
	"github.com/podbot/podbot/termsafe"
)

// LocalCloneOptions select a local_clone workspace: a host repository
// copied into the sandbox on its own branch, podbot/<sandbox name>.
type LocalCloneOptions struct {
	// Path is the host repository (a work tree; absolute).
	Path string
	// Base is the revision the branch starts at; empty is the host's HEAD,
	// which must then be on a branch.
	Base string
	// Dirty carries the host's uncommitted changes (tracked and untracked,
	// not ignored) as one commit on top of the base.
	Dirty bool
	// Depth, when positive, copies only the last Depth commits of history
	// (a shallow repository in the sandbox).
	Depth int
}

// localCloneWorkspace is the request workspace of lc under baseDir.
func localCloneWorkspace(lc LocalCloneOptions, baseDir string) launchplan.Workspace {
	return launchplan.Workspace{Strategy: launchplan.WorkspaceLocalClone, BaseDir: baseDir,
		ContainerPath: path.Join(baseDir, localclone.DirName(filepath.Clean(lc.Path)))}
}

// localCloneSetup is a prepared copy: the host side is checked and the
// bundle written; copyIn puts it into the container.
type localCloneSetup struct {
	git    localclone.Git
	repo   localclone.Repo
	info   localclone.Info
	tmp    string
	bundle string
	// shallow is the shallow list of a Depth copy ("" for a full one).
	shallow string
}

// prepareLocalClone checks the host repository, resolves the base (with
// Dirty, a commit of the uncommitted changes on top of it) and writes the
// bundle for sandbox name, whose copy goes to dir. Nothing in the host
// repository changes (a dirty commit is an unreferenced object).
func prepareLocalClone(ctx context.Context, environ []string, lc LocalCloneOptions, name, dir string) (*localCloneSetup, error) {
	g := localclone.Git{Environ: environ}
	repo, err := localclone.Open(ctx, g, lc.Path)
	if err != nil {
		return nil, err
	}
	base, err := repo.Resolve(ctx, g, lc.Base)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "podbot-clone-")
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "create", Path: os.TempDir(), Err: err}
	}
	s := &localCloneSetup{git: g, repo: repo, tmp: tmp}
	if lc.Dirty {
		if base, err = repo.DirtyCommit(ctx, g, base, tmp); err != nil {
			s.cleanup()
			return nil, err
		}
	}
	s.info = localclone.Info{Name: name, Repo: repo.Top, Base: base, Branch: localclone.Branch(name), Dir: dir}
	s.bundle = filepath.Join(tmp, "in.bundle")
	if lc.Depth > 0 {
		if s.shallow, err = repo.WriteShallowBundle(ctx, g, s.bundle, tmp, base, localclone.BranchRef(name), lc.Depth); err != nil {
			s.cleanup()
			return nil, err
		}
		return s, nil
	}
	f, err := os.OpenFile(s.bundle, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		s.cleanup()
		return nil, &errdefs.FilesystemError{Op: "create", Path: s.bundle, Err: err}
	}
	err = repo.WriteBundle(ctx, g, f, base, localclone.BranchRef(name))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.cleanup()
		return nil, err
	}
	return s, nil
}

// cleanup removes the host temporary directory.
func (s *localCloneSetup) cleanup() {
	if s != nil && s.tmp != "" {
		_ = os.RemoveAll(s.tmp)
	}
}

// copyIn puts the bundle into the sandbox through sio (the engine's copy
// API, or a Pod's exec stdin), clones it there as the agent's user (so the
// copy belongs to the agent) and records the base on the host as
// refs/podbot/base/<name>, which keeps it from being garbage-collected.
func (s *localCloneSetup) copyIn(ctx context.Context, sio cloneIO) error {
	baseDir := path.Dir(s.info.Dir)
	run := func(argv []string, out *bytes.Buffer) error {
		var errBuf bytes.Buffer
		var stdout io.Writer
		if out != nil {
			stdout = &limitedBuffer{buf: out, max: maxStepOutput}
		}
		code, err := sio.run(ctx, argv, nil, stdout, &limitedBuffer{buf: &errBuf, max: maxStepOutput})
		if err != nil {
			return err
		}
		if code != 0 {
			return &errdefs.RepoError{Op: "copy in", Repo: s.info.Repo, Reason: errdefs.ErrExecFailed,
				Msg: fmt.Sprintf("%s exited with status %d in the sandbox: %s", argv[0], code, termsafe.Line(lastLines(errBuf.String(), 3)))}
		}
		return nil
	}
	if err := run([]string{"mkdir", "-p", "--", baseDir}, nil); err != nil {
		// The agent may not create it (a non-root user under /): the
		// transport makes it, owned by the agent's user when it can.
		if cerr := sio.makeDir(ctx, baseDir); cerr != nil {
			return errors.Join(err, cerr)
		}
	}
	f, err := os.Open(s.bundle)
	if err != nil {
		return &errdefs.FilesystemError{Op: "open", Path: s.bundle, Err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return &errdefs.FilesystemError{Op: "stat", Path: s.bundle, Err: err}
	}
	name := ".podbot-" + s.info.Name + ".bundle"
	files := []cloneFile{{name: name, size: fi.Size(), data: f}}
	shallowPath := ""
	if s.shallow != "" {
		shallowName := ".podbot-" + s.info.Name + ".shallow"
		files = append(files, cloneFile{name: shallowName, size: int64(len(s.shallow)), data: strings.NewReader(s.shallow)})
		shallowPath = path.Join(baseDir, shallowName)
	}
	if err := sio.put(ctx, baseDir, files); err != nil {
		return err
	}
	var out bytes.Buffer
	if err := run(localclone.CopyInCommand(path.Join(baseDir, name), s.info.Dir, s.info.Branch, shallowPath), &out); err != nil {
		return err
	}
	if got := strings.TrimSpace(out.String()); got != s.info.Base {
		return &errdefs.RepoError{Op: "copy in", Repo: s.info.Repo, Reason: errdefs.ErrExecFailed,
			Msg: "the copy's HEAD is " + termsafe.Line(got) + ", not " + s.info.Base}
	}
	_, err = s.git.Run(ctx, s.repo.Top, nil, nil, "update-ref", localclone.BaseRef(s.info.Name), s.info.Base)
	return err
}

// makeDir creates dir (one level) through the engine's copy API, mode
// 0755, owned by the plan's numeric user (root otherwise).
func makeDir(ctx context.Context, conn *engine.Conn, id, dir string, plan launchplan.Plan) error {
	uid, gid, _ := plan.NumericUser()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: path.Base(dir) + "/", Mode: 0o755, Uid: uid, Gid: gid, ModTime: time.Now()}); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return conn.CopyTar(ctx, id, path.Dir(dir), &buf)
}

// errNotLocalClone says a sandbox holds no local clone.
func errNotLocalClone(name string) error {
	return &errdefs.RepoError{Op: "open sandbox", Repo: termsafe.Line(name), Reason: errdefs.ErrRefused,
		Msg:  "sandbox " + termsafe.Line(name) + " was not made from a local repository",
		Hint: "only sandboxes made with --repo PATH (workspace.source = \"local_clone\") have a branch to review"}
}

// CopyLocalRepo copies the host repository of lc into the running
// container id at dir, on branch podbot/<plan.Name>, as Launch and Create
// do for a local_clone workspace (with the plan's user), and returns what
// the sandbox's labels would record. Library callers and benchmarks use
// it for a sandbox that already exists; its labels are not changed.
func CopyLocalRepo(ctx context.Context, conn *engine.Conn, id string, plan launchplan.Plan, lc LocalCloneOptions, dir string, environ []string) (localclone.Info, error) {
	s, err := prepareLocalClone(ctx, environ, lc, plan.Name, dir)
	if err != nil {
		return localclone.Info{}, err
	}
	defer s.cleanup()
	if err := s.copyIn(ctx, engineCloneIO{conn: conn, id: id, plan: plan}); err != nil {
		return localclone.Info{}, err
	}
	return s.info, nil
}
