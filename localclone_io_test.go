package podbot

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/localclone"
)

// hostExecIO is a cloneIO whose "sandbox" is this host: commands run here,
// and files go in as they do into a Pod, over an exec's stdin
// (putByExec). It stands for kubeCloneIO, whose pods/exec a fake
// clientset cannot run.
type hostExecIO struct {
	env []string
	// export, when set, replaces the export's stdout (a hostile sandbox).
	export []byte
}

func (h hostExecIO) run(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if h.export != nil && strings.Contains(strings.Join(argv, " "), "bundle create") {
		_, err := stdout.Write(h.export)
		return 0, err
	}
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Env, c.Stdin, c.Stdout, c.Stderr = h.env, stdin, stdout, stderr
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, err
}

func (hostExecIO) makeDir(context.Context, string) error { return errors.New("no copy API") }

func (h hostExecIO) put(ctx context.Context, dir string, files []cloneFile) error {
	return putByExec(ctx, h.run, "test", dir, files)
}

// testEnv is a git environment without the user's configuration.
func testEnv(t *testing.T) []string {
	home := t.TempDir()
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
}

func gitIn(t *testing.T, env []string, dir string, args ...string) string {
	t.Helper()
	c := exec.Command("git", append([]string{"-C", dir}, args...)...)
	c.Env = env
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// execSandbox copies a host repository into a local "sandbox" through
// hostExecIO and returns the review of it.
func execSandbox(t *testing.T, sio hostExecIO, shallow bool) (*Review, string) {
	t.Helper()
	ctx := context.Background()
	env := sio.env
	root, _ := filepath.EvalSymlinks(t.TempDir())
	host := filepath.Join(root, "app")
	if err := os.Mkdir(host, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, env, host, "init", "-q", "-b", "main")
	for _, f := range []string{"a", "b", "c"} {
		os.WriteFile(filepath.Join(host, f), []byte(f+"\n"), 0o644)
		gitIn(t, env, host, "add", f)
		gitIn(t, env, host, "commit", "-qm", "add "+f)
	}
	lc := LocalCloneOptions{Path: host}
	if shallow {
		lc.Depth = 1
	}
	dir := filepath.Join(root, "sandbox", "work", "app")
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := prepareLocalClone(ctx, env, lc, "sb1", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.cleanup()
	if err := s.copyIn(ctx, sio); err != nil {
		t.Fatalf("copyIn: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".podbot-*")); len(left) != 0 {
		t.Errorf("the bundle was left in the sandbox: %v", left)
	}
	c := Container{Name: "sb1", State: "running", Labels: s.info.Labels()}
	r, err := openReview(ctx, c, true, "", sio, host, env)
	if err != nil {
		t.Fatal(err)
	}
	return r, dir
}

// TestCloneOverExecStdin: the flow of a Pod's transport, run locally. The
// bundle goes in over an exec's stdin (a full and a --depth copy); a
// commit and an uncommitted file made in the sandbox come back over the
// export's stdout as diff, log and fetch show them.
func TestCloneOverExecStdin(t *testing.T) {
	ctx := context.Background()
	for _, shallow := range []bool{false, true} {
		env := testEnv(t)
		r, dir := execSandbox(t, hostExecIO{env: env}, shallow)
		if got := gitIn(t, env, dir, "rev-parse", "HEAD"); got != r.Info.Base {
			t.Fatalf("sandbox HEAD %s, base %s", got, r.Info.Base)
		}
		if shallow != (gitIn(t, env, dir, "rev-parse", "--is-shallow-repository") == "true") {
			t.Errorf("shallow %v: the copy's shallowness is wrong", shallow)
		}
		os.WriteFile(filepath.Join(dir, "new"), []byte("from the sandbox\n"), 0o644)
		gitIn(t, env, dir, "add", "new")
		gitIn(t, env, dir, "commit", "-qm", "sandbox commit")
		os.WriteFile(filepath.Join(dir, "wip"), []byte("uncommitted\n"), 0o644)

		var diff bytes.Buffer
		if err := r.Diff(ctx, &diff, DiffOptions{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(diff.String(), "+from the sandbox") || !strings.Contains(diff.String(), "+uncommitted") {
			t.Errorf("diff:\n%s", diff.String())
		}
		var log bytes.Buffer
		if err := r.Log(ctx, &log); err != nil || !strings.Contains(log.String(), "sandbox commit") {
			t.Errorf("log %v:\n%s", err, log.String())
		}
		res, err := r.Fetch(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if res.Commits != 1 || gitIn(t, env, r.Info.Repo, "rev-parse", res.Ref) != res.Tip {
			t.Errorf("fetch %+v", res)
		}
	}
}

// TestCloneOverExecStdinHostile: what comes back over a Pod's exec is
// checked as on the engine: a bundle that offers other refs besides the
// branch has them ignored and named, and one that is not a bundle is
// refused, with nothing written to the host's refs.
func TestCloneOverExecStdinHostile(t *testing.T) {
	ctx := context.Background()
	env := testEnv(t)
	r, dir := execSandbox(t, hostExecIO{env: env}, false)
	gitIn(t, env, dir, "commit", "-q", "--allow-empty", "-m", "work")
	gitIn(t, env, dir, "branch", "evil")
	gitIn(t, env, dir, "update-ref", localclone.SnapshotRef, "HEAD")
	bundle := filepath.Join(t.TempDir(), "b")
	gitIn(t, env, dir, "bundle", "create", "-q", bundle, "refs/heads/"+r.Info.Branch, "refs/heads/evil", localclone.SnapshotRef, "^"+r.Info.Base)
	data, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	r.sio = hostExecIO{env: env, export: data}
	if _, err := r.Fetch(ctx, false); err != nil {
		t.Fatal(err)
	}
	if len(r.Ignored) != 1 || r.Ignored[0] != "refs/heads/evil" {
		t.Errorf("ignored %v, want refs/heads/evil", r.Ignored)
	}
	if out := gitIn(t, env, r.Info.Repo, "for-each-ref", "--format=%(refname)", "refs/heads/evil"); out != "" {
		t.Errorf("the host got %s", out)
	}
	r.sio = hostExecIO{env: env, export: []byte("not a bundle\n")}
	if _, err := r.Fetch(ctx, false); err == nil {
		t.Error("a stream that is not a bundle was accepted")
	}
}

// TestPutByExecChecksSize: a file whose stream ends short is an error,
// and an existing file is not overwritten.
func TestPutByExecChecksSize(t *testing.T) {
	ctx := context.Background()
	sio := hostExecIO{env: testEnv(t)}
	dir := t.TempDir()
	err := putByExec(ctx, sio.run, "test", dir, []cloneFile{{name: "f", size: 10, data: strings.NewReader("short")}})
	if !errors.Is(err, errdefs.ErrExecFailed) || !strings.Contains(err.Error(), "5 of 10") {
		t.Errorf("short stream: %v", err)
	}
	if err := putByExec(ctx, sio.run, "test", dir, []cloneFile{{name: "f", size: 3, data: strings.NewReader("abc")}}); !errors.Is(err, errdefs.ErrExecFailed) {
		t.Errorf("existing file: %v", err)
	}
	if err := putByExec(ctx, sio.run, "test", dir, []cloneFile{{name: "g", size: 3, data: strings.NewReader("abcdef")}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "g")); string(b) != "abc" {
		t.Errorf("g holds %q", b)
	}
}
