//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// lcHost is a host repository for the local_clone tests with its own HOME,
// so host git has an identity and no user configuration of the machine.
type lcHost struct {
	dir, home string
}

// newLCHost makes a repository with two commits on main (files a and b).
func newLCHost(t *testing.T) lcHost {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := lcHost{dir: filepath.Join(root, "app"), home: filepath.Join(root, "home")}
	if err := os.MkdirAll(h.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.home, ".gitconfig"), []byte("[user]\n\tname = host\n\temail = host@example.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.git(t, "init", "-q", "-b", "main", h.dir)
	h.write(t, "a", "line one\nline two\n")
	h.write(t, "b", "bee\n")
	h.git(t, "-C", h.dir, "add", "a")
	h.git(t, "-C", h.dir, "commit", "-qm", "add a")
	h.git(t, "-C", h.dir, "add", "b")
	h.git(t, "-C", h.dir, "commit", "-qm", "add b")
	return h
}

// env is the environment host git and podbot run with.
func (h lcHost) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+h.home)
}

// git runs host git and returns its stdout, failing the test on an error.
func (h lcHost) git(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Env = h.env()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, errOut.String())
	}
	return out.String()
}

// write writes a file in the work tree.
func (h lcHost) write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// podbot runs podbot against e in the host repository's directory.
func (h lcHost) podbot(t *testing.T, ctx context.Context, e engineUnderTest, args ...string) result {
	t.Helper()
	cmd := podbotCmd(t, ctx, e, "", args...)
	cmd.Env = append(h.env(), "PODBOT_CONFIG_PATH="+cmd.Env[len(cmd.Env)-1][len("PODBOT_CONFIG_PATH="):])
	cmd.Dir = h.dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	return result{Code: exitStatus(t, cmd.Run(), args), Stdout: out.String(), Stderr: errOut.String()}
}

// mustPodbot is podbot that must exit 0.
func (h lcHost) mustPodbot(t *testing.T, ctx context.Context, e engineUnderTest, args ...string) result {
	t.Helper()
	r := h.podbot(t, ctx, e, args...)
	if r.Code != 0 {
		t.Fatalf("podbot %v: exit %d\nstdout: %s\nstderr: %s", args, r.Code, r.Stdout, r.Stderr)
	}
	return r
}

// create makes a local_clone sandbox of h named for purpose.
func (h lcHost) create(t *testing.T, ctx context.Context, e engineUnderTest, purpose string, args ...string) string {
	t.Helper()
	name := testName(e, purpose)
	removeOnCleanup(t, e, name)
	h.mustPodbot(t, ctx, e, append([]string{"create", "--name", name, "--repo", h.dir}, args...)...)
	return name
}

// state is what must not change on the host: refs, config, hooks, status.
func (h lcHost) state(t *testing.T) string {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(h.dir, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	hooks, _ := os.ReadDir(filepath.Join(h.dir, ".git", "hooks"))
	var names []string
	for _, e := range hooks {
		names = append(names, e.Name())
	}
	return "config:\n" + string(cfg) + "\nhooks: " + strings.Join(names, ",") + "\nstatus:\n" + h.git(t, "-C", h.dir, "status", "--porcelain")
}

// sandboxScript runs a shell script in the sandbox's copy (/work/app).
func sandboxScript(t *testing.T, ctx context.Context, e engineUnderTest, name, script string) string {
	t.Helper()
	return mustExec(t, ctx, e, name, "sh", "-c", "set -e; cd /work/app; git config user.name agent; git config user.email agent@example.com; "+script)
}
