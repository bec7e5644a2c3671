//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/podbot/podbot/github/githubtest"
)

// runEnv is a podbot run invocation: its config, extra environment and the
// private directories it may leave things in.
type runEnv struct {
	cfg        string   // config file contents (TOML)
	env        []string // added to podbot's environment
	runtimeDir string   // XDG_RUNTIME_DIR: token directories live here
	tmpDir     string   // TMPDIR
}

// newRunEnv returns private runtime and temp directories for one run.
func newRunEnv(t *testing.T, cfg string, env ...string) runEnv {
	t.Helper()
	r := runEnv{cfg: cfg, env: env, runtimeDir: t.TempDir(), tmpDir: t.TempDir()}
	if err := os.Chmod(r.runtimeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	return r
}

// command prepares podbot ARGS against engine e in this environment.
func (r runEnv) command(t *testing.T, ctx context.Context, e engineUnderTest, args ...string) *exec.Cmd {
	t.Helper()
	cmd := podbotCmd(t, ctx, e, r.cfg, args...)
	cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+r.runtimeDir, "TMPDIR="+r.tmpDir)
	cmd.Env = append(cmd.Env, r.env...)
	return cmd
}

// leftovers lists whatever a run left in its runtime and temp directories.
func (r runEnv) leftovers(t *testing.T) []string {
	t.Helper()
	var found []string
	for _, dir := range []string{r.runtimeDir, r.tmpDir} {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && p != dir {
				found = append(found, p)
			}
			return nil
		})
	}
	return found
}

// ptyRun is podbot running on a real pseudo-terminal.
type ptyRun struct {
	cmd  *exec.Cmd
	ptmx *os.File
	out  lockedBuffer
	done chan error
}

// startOnPTY starts cmd with a new pseudo-terminal (rows x cols) as its
// controlling terminal and stdin, stdout and stderr.
func startOnPTY(t *testing.T, cmd *exec.Cmd, rows, cols uint16) *ptyRun {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: rows, Cols: cols}); err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	p := &ptyRun{cmd: cmd, ptmx: ptmx, done: make(chan error, 1)}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(&p.out, ptmx)
	}()
	go func() {
		err := cmd.Wait()
		select {
		case <-copied:
		case <-time.After(2 * time.Second):
		}
		p.done <- err
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		ptmx.Close()
	})
	return p
}

// wait returns podbot's exit status, failing the test after within.
func (p *ptyRun) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case err := <-p.done:
		return exitStatus(t, err, p.cmd.Args)
	case <-time.After(within):
		_ = p.cmd.Process.Kill()
		t.Fatalf("podbot did not end within %s; output:\n%s", within, p.out.String())
	}
	return -1
}

// githubSection starts the fake GitHub App and returns the [github]
// config section that points podbot at it.
func githubSection(t *testing.T) (string, *githubtest.Server) {
	t.Helper()
	gh, _, keyPath := fakeGitHubApp(t)
	return fmt.Sprintf("[github]\napp_id = %d\ninstallation_id = %d\nprivate_key_path = %q\napi_url = %q\n",
		gh.AppID(), gh.InstallationID(), keyPath, gh.URL), gh
}

// containersLabelled lists every container carrying label key=value.
func containersLabelled(t *testing.T, ctx context.Context, e engineUnderTest, key, value string) []container.Summary {
	t.Helper()
	rows, err := e.API.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", key+"="+value))})
	if err != nil {
		t.Fatalf("list containers labelled %s=%s: %v", key, value, err)
	}
	return rows
}

// lineWatcher reads r line by line, recording each line and when it came.
type lineWatcher struct {
	mu    sync.Mutex
	lines []timedLine
	cond  chan struct{}
}

type timedLine struct {
	at   time.Time
	text string
}

func watchLines(r io.Reader) *lineWatcher {
	w := &lineWatcher{cond: make(chan struct{}, 1)}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, timedLine{time.Now(), sc.Text()})
			w.mu.Unlock()
			select {
			case w.cond <- struct{}{}:
			default:
			}
		}
		w.mu.Lock()
		w.lines = append(w.lines, timedLine{time.Now(), "\x00EOF"})
		w.mu.Unlock()
		select {
		case w.cond <- struct{}{}:
		default:
		}
	}()
	return w
}

// waitLines waits until n lines with prefix arrived (or EOF) and returns
// them all.
func (w *lineWatcher) waitLines(prefix string, n int, within time.Duration) ([]timedLine, bool) {
	deadline := time.After(within)
	for {
		w.mu.Lock()
		count, eof := 0, false
		for _, l := range w.lines {
			if strings.HasPrefix(l.text, prefix) {
				count++
			}
			eof = eof || l.text == "\x00EOF"
		}
		snapshot := append([]timedLine(nil), w.lines...)
		w.mu.Unlock()
		if count >= n {
			return snapshot, true
		}
		if eof {
			return snapshot, false
		}
		select {
		case <-w.cond:
		case <-deadline:
			return snapshot, false
		}
	}
}

func joinLines(ls []timedLine) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String()
}
