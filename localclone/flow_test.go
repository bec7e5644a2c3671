package localclone

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

// testGit is the host git with a fixed identity and no user configuration.
func testGit(t *testing.T) Git {
	t.Helper()
	home := t.TempDir()
	return Git{Environ: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + home}}
}

func sh(t *testing.T, dir string, argv ...string) string {
	t.Helper()
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, out)
	}
	return string(out)
}

// hostRepo makes a repository with two commits on main.
func hostRepo(t *testing.T) string {
	t.Helper()
	d, _ := filepath.EvalSymlinks(t.TempDir())
	d = filepath.Join(d, "app")
	sh(t, "/", "git", "init", "-q", "-b", "main", d)
	for _, f := range []string{"a", "b"} {
		os.WriteFile(filepath.Join(d, f), []byte(f+"\n"), 0o644)
		sh(t, d, "git", "add", f)
		sh(t, d, "git", "commit", "-qm", "add "+f)
	}
	return d
}

// TestRoundTrip runs the sandbox side locally: copy in, commit, export,
// import into a quarantine, fetch into the host.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	g := testGit(t)
	host := hostRepo(t)
	r, err := Open(ctx, g, host)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(host, "a"), []byte("dirty\n"), 0o644)
	base, err := r.Resolve(ctx, g, "")
	if err != nil {
		t.Fatal(err)
	}
	start, err := r.DirtyCommit(ctx, g, base, t.TempDir())
	if err != nil || start == base {
		t.Fatalf("DirtyCommit = %s, %v", start, err)
	}
	if st := sh(t, host, "git", "status", "--porcelain"); st != " M a\n" {
		t.Fatalf("host status changed: %q", st)
	}
	sbx := t.TempDir()
	var bundle bytes.Buffer
	if err := r.WriteBundle(ctx, g, &bundle, start, BranchRef("sb1")); err != nil {
		t.Fatal(err)
	}
	bpath := filepath.Join(sbx, "in.bundle")
	os.WriteFile(bpath, bundle.Bytes(), 0o644)
	dir := filepath.Join(sbx, "app")
	head := sh(t, sbx, CopyInCommand(bpath, dir, Branch("sb1"), "")...)
	if strings.TrimSpace(head) != start {
		t.Fatalf("sandbox HEAD %q, want %s", head, start)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a")); string(got) != "dirty\n" {
		t.Errorf("dirty change not carried: %q", got)
	}
	if cfg := sh(t, dir, "git", "config", "--local", "-l"); strings.Contains(cfg, "remote.") {
		t.Errorf("sandbox config keeps a remote:\n%s", cfg)
	}
	os.WriteFile(filepath.Join(dir, "c"), []byte("agent\n"), 0o644)
	sh(t, dir, "git", "add", "c")
	sh(t, dir, "git", "commit", "-qm", "agent work")
	os.WriteFile(filepath.Join(dir, "b"), []byte("uncommitted\n"), 0o644)
	sh(t, dir, "git", "update-ref", "refs/heads/main", "HEAD")

	info := Info{Name: "sb1", Repo: r.Top, Base: start, Branch: Branch("sb1"), Dir: dir}
	argv := ExportCommand(info, false)
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	exported, err := c.Output()
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	q, err := r.Import(ctx, g, bytes.NewReader(exported), []string{BranchRef("sb1"), SnapshotRef}, nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Ignored) != 0 {
		t.Errorf("ignored %v", q.Ignored)
	}
	diff, err := q.Output(ctx, g, "diff", "--no-color", start, q.Ref(SnapshotRef))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(diff), "+agent") || !strings.Contains(string(diff), "+uncommitted") {
		t.Errorf("diff misses changes:\n%s", diff)
	}
	if err := q.FetchInto(ctx, g, r, BranchRef("sb1"), BranchRef("sb1")); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, host, "git", "log", "--format=%s", "-1", "podbot/sb1"); got != "agent work\n" {
		t.Errorf("host branch tip %q", got)
	}
	if got := sh(t, host, "git", "rev-parse", "main"); strings.TrimSpace(got) != base {
		t.Errorf("host main moved")
	}
}

func TestImportRefusesUnknownPrerequisite(t *testing.T) {
	ctx := context.Background()
	g := testGit(t)
	r, _ := Open(ctx, g, hostRepo(t))
	in := "# v2 git bundle\n-" + idA + " x\n" + idB + " refs/heads/podbot/x\n\nPACK"
	_, err := r.Import(ctx, g, strings.NewReader(in), []string{"refs/heads/podbot/x"}, nil, t.TempDir())
	if !errors.Is(err, errdefs.ErrRefused) {
		t.Fatalf("err = %v", err)
	}
	_, err = r.Import(ctx, g, strings.NewReader(in), []string{"refs/heads/podbot/y"}, nil, t.TempDir())
	if !errors.Is(err, errdefs.ErrRefused) || !strings.Contains(err.Error(), "does not hold") {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	g := testGit(t)
	plain := t.TempDir()
	bare := filepath.Join(t.TempDir(), "b.git")
	sh(t, "/", "git", "init", "-q", "--bare", bare)
	empty := filepath.Join(t.TempDir(), "e")
	sh(t, "/", "git", "init", "-q", empty)
	file := filepath.Join(plain, "f")
	os.WriteFile(file, nil, 0o600)
	for name, c := range map[string]struct{ path, want string }{
		"not git":    {plain, "not a git repository"},
		"bare":       {bare, "bare repository"},
		"no commits": {empty, "no commits"},
		"file":       {file, "not a directory"},
		"relative":   {"src", "absolute"},
	} {
		_, err := Open(ctx, g, c.path)
		if !errors.Is(err, errdefs.ErrRepo) || !errors.Is(err, errdefs.ErrInvalidValue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	host := hostRepo(t)
	sh(t, host, "git", "checkout", "-q", "--detach")
	r, err := Open(ctx, g, host)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Resolve(ctx, g, ""); err == nil || !strings.Contains(err.Error(), "detached") {
		t.Errorf("detached: err = %v", err)
	}
	if _, err := r.Resolve(ctx, g, "main"); err != nil {
		t.Errorf("detached with --base main: %v", err)
	}
	if _, err := r.Resolve(ctx, g, "--output=/tmp/x"); err == nil {
		t.Error("option-like base accepted")
	}
}

func TestGitEnvironment(t *testing.T) {
	g := Git{Environ: []string{"PATH=/bin", "GIT_DIR=/evil", "GIT_CONFIG_GLOBAL=/evil", "GIT_EXTERNAL_DIFF=/evil", "GIT_AUTHOR_NAME=me"}}
	c := g.cmd(context.Background(), "/", nil, "status")
	env := strings.Join(c.Env, "\n")
	if strings.Contains(env, "/evil") || !strings.Contains(env, "GIT_AUTHOR_NAME=me") || !strings.Contains(env, "GIT_TERMINAL_PROMPT=0") {
		t.Errorf("env:\n%s", env)
	}
	if args := strings.Join(c.Args, " "); !strings.Contains(args, "core.hooksPath=/dev/null") || !strings.Contains(args, "core.fsmonitor=false") {
		t.Errorf("args %s", args)
	}
}

// TestImportFreshBranch: a branch with no new commits is left out of the
// sandbox's bundle by git; it comes back as its base.
func TestImportFreshBranch(t *testing.T) {
	ctx := context.Background()
	g := testGit(t)
	host := hostRepo(t)
	r, _ := Open(ctx, g, host)
	base, _ := r.Resolve(ctx, g, "")
	var bundle bytes.Buffer
	if err := r.WriteBundle(ctx, g, &bundle, base, BranchRef("sb2")); err != nil {
		t.Fatal(err)
	}
	sbx := t.TempDir()
	bpath := filepath.Join(sbx, "in.bundle")
	os.WriteFile(bpath, bundle.Bytes(), 0o644)
	dir := filepath.Join(sbx, "app")
	sh(t, sbx, CopyInCommand(bpath, dir, Branch("sb2"), "")...)
	if _, err := os.Stat(bpath); !os.IsNotExist(err) {
		t.Errorf("bundle left in the sandbox: %v", err)
	}
	info := Info{Name: "sb2", Repo: r.Top, Base: base, Branch: Branch("sb2"), Dir: dir}
	argv := ExportCommand(info, false)
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	if err != nil {
		t.Fatal(err)
	}
	q, err := r.Import(ctx, g, bytes.NewReader(out), []string{BranchRef("sb2"), SnapshotRef}, map[string]string{BranchRef("sb2"): base}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if q.Tips[BranchRef("sb2")] != base {
		t.Errorf("tip %s, want base %s", q.Tips[BranchRef("sb2")], base)
	}
	st := StatusCommand(info)
	got, err := exec.Command(st[0], st[1:]...).Output()
	if err != nil {
		t.Fatal(err)
	}
	if tip, dirty, ok := ParseStatus(string(got)); !ok || dirty || tip != base {
		t.Errorf("status %q -> %s %v %v", got, tip, dirty, ok)
	}
}

func TestParseStatus(t *testing.T) {
	for in, want := range map[string]struct {
		tip       string
		dirty, ok bool
	}{
		idA + "\nclean\n": {idA, false, true},
		"\ndirty\n":       {"", true, true},
		"junk\nclean\n":   {"", false, false},
		idA + "\nmaybe\n": {"", false, false},
		"":                {"", false, false},
	} {
		tip, dirty, ok := ParseStatus(in)
		if tip != want.tip || dirty != want.dirty || ok != want.ok {
			t.Errorf("ParseStatus(%q) = %q %v %v", in, tip, dirty, ok)
		}
	}
}

func TestStoppedRefParsers(t *testing.T) {
	if id, ok := ParseLooseRef(idA + "\n"); !ok || id != idA {
		t.Errorf("loose: %q %v", id, ok)
	}
	for _, bad := range []string{"ref: refs/heads/main\n", idA + "\n\n", "", "zz\n"} {
		if _, ok := ParseLooseRef(bad); ok {
			t.Errorf("loose %q accepted", bad)
		}
	}
	packed := "# pack-refs with: peeled fully-peeled sorted \n" + idA + " refs/heads/main\n" + idB + " refs/heads/podbot/sb\n^" + idA + "\n"
	if id, ok := FindPackedRef(packed, "refs/heads/podbot/sb"); !ok || id != idB {
		t.Errorf("packed: %q %v", id, ok)
	}
	if _, ok := FindPackedRef(packed, "refs/heads/podbot/other"); ok {
		t.Error("missing ref found")
	}
}

func FuzzFindPackedRef(f *testing.F) {
	f.Add(idA+" refs/heads/podbot/sb\n", "refs/heads/podbot/sb")
	f.Add("^"+idA+"\n"+idB+" refs/heads/podbot/sb x\n", "refs/heads/podbot/sb")
	f.Fuzz(func(t *testing.T, data, ref string) {
		if id, ok := FindPackedRef(data, ref); ok && !isObjectID(id) {
			t.Fatalf("returned %q", id)
		}
		if id, ok := ParseLooseRef(data); ok && !isObjectID(id) {
			t.Fatalf("loose returned %q", id)
		}
	})
}

// TestShallowCopy: --depth 1 gives the sandbox one commit of history, and
// its work still comes back.
func TestShallowCopy(t *testing.T) {
	ctx := context.Background()
	g := testGit(t)
	host := hostRepo(t)
	r, _ := Open(ctx, g, host)
	base, _ := r.Resolve(ctx, g, "")
	tmp := t.TempDir()
	sbx := t.TempDir()
	bpath := filepath.Join(sbx, "in.bundle")
	list, err := r.WriteShallowBundle(ctx, g, bpath, tmp, base, BranchRef("sb3"), 1)
	if err != nil || strings.TrimSpace(list) != base {
		t.Fatalf("WriteShallowBundle = %q, %v", list, err)
	}
	spath := filepath.Join(sbx, "in.shallow")
	os.WriteFile(spath, []byte(list), 0o644)
	dir := filepath.Join(sbx, "app")
	if head := sh(t, sbx, CopyInCommand(bpath, dir, Branch("sb3"), spath)...); strings.TrimSpace(head) != base {
		t.Fatalf("HEAD %q", head)
	}
	if n := sh(t, dir, "git", "rev-list", "--count", "HEAD"); n != "1\n" {
		t.Errorf("history of %s commits, want 1", n)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "b")); string(got) != "b\n" {
		t.Errorf("work tree b = %q", got)
	}
	os.WriteFile(filepath.Join(dir, "c"), []byte("c\n"), 0o644)
	sh(t, dir, "git", "add", "c")
	sh(t, dir, "git", "commit", "-qm", "shallow work")
	info := Info{Name: "sb3", Repo: r.Top, Base: base, Branch: Branch("sb3"), Dir: dir}
	argv := ExportCommand(info, false)
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := c.Output()
	if err != nil {
		t.Fatal(err)
	}
	q, err := r.Import(ctx, g, bytes.NewReader(out), []string{BranchRef("sb3"), SnapshotRef}, map[string]string{BranchRef("sb3"): base}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := q.FetchInto(ctx, g, r, BranchRef("sb3"), BranchRef("sb3")); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, host, "git", "log", "--format=%s", "-1", "podbot/sb3"); got != "shallow work\n" {
		t.Errorf("fetched tip %q", got)
	}
}
