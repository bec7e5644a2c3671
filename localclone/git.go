package localclone

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/termsafe"
)

// maxGitOutput bounds what a host git command may print into memory.
const maxGitOutput = 64 << 20

// safeConfig is passed to every host git command: no hook runs and no
// file-system monitor is started, whatever the repository's or the user's
// configuration says, so nothing that came from a sandbox can get a command
// run on the host through git.
// Submodules are never recursed into, so a .gitmodules from a sandbox
// makes the host fetch nothing.
var safeConfig = []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "protocol.ext.allow=never",
	"-c", "submodule.recurse=false"}

// Git runs the host's git with a controlled environment: the caller's
// environment minus every GIT_* variable but the author and committer
// identity (so no GIT_DIR, GIT_CONFIG_*, GIT_EXTERNAL_DIFF or GIT_SSH
// redirects it), with prompts off.
type Git struct {
	// Path is the git program; empty looks "git" up in PATH.
	Path string
	// Environ is the base environment; GIT_* variables are dropped.
	Environ []string
}

// cmd builds the command; extraEnv is added after the filtered environment.
func (g Git) cmd(ctx context.Context, dir string, extraEnv []string, args ...string) *exec.Cmd {
	prog := g.Path
	if prog == "" {
		prog = "git"
	}
	c := exec.CommandContext(ctx, prog, append(append([]string(nil), safeConfig...), args...)...)
	c.Dir = dir
	env := make([]string, 0, len(g.Environ)+len(extraEnv)+2)
	for _, kv := range g.Environ {
		if !strings.HasPrefix(kv, "GIT_") || identityVar(kv) {
			env = append(env, kv)
		}
	}
	env = append(env, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
	c.Env = append(env, extraEnv...)
	return c
}

// Run runs git in dir and returns its standard output (bounded). A non-zero
// exit is a *errdefs.RepoError quoting the end of stderr, made safe.
func (g Git) Run(ctx context.Context, dir string, stdin io.Reader, extraEnv []string, args ...string) ([]byte, error) {
	c := g.cmd(ctx, dir, extraEnv, args...)
	var out, errOut boundedBuffer
	out.max, errOut.max = maxGitOutput, 16<<10
	c.Stdin, c.Stdout, c.Stderr = stdin, &out, &errOut
	if err := c.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &errdefs.RepoError{Op: "git " + args[0], Repo: dir, Reason: errdefs.ErrExecFailed,
			Msg: termsafe.Line(lastLine(errOut.String())), Err: err}
	}
	if out.over {
		return nil, &errdefs.RepoError{Op: "git " + args[0], Repo: dir, Reason: errdefs.ErrRefused,
			Msg: fmt.Sprintf("printed more than %d bytes", maxGitOutput)}
	}
	return out.Bytes(), nil
}

// Stream runs git in dir with stdout going to w.
func (g Git) Stream(ctx context.Context, dir string, stdin io.Reader, w io.Writer, extraEnv []string, args ...string) error {
	c := g.cmd(ctx, dir, extraEnv, args...)
	var errOut boundedBuffer
	errOut.max = 16 << 10
	c.Stdin, c.Stdout, c.Stderr = stdin, w, &errOut
	if err := c.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &errdefs.RepoError{Op: "git " + args[0], Repo: dir, Reason: errdefs.ErrExecFailed,
			Msg: termsafe.Line(lastLine(errOut.String())), Err: err}
	}
	return nil
}

// line runs git and returns its output's first line, trimmed.
func (g Git) line(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := g.Run(ctx, dir, nil, nil, args...)
	if err != nil {
		return "", err
	}
	s, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(s), nil
}

// lastLine is the last non-empty line of s, at most 300 bytes.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[len(s)-300:]
	}
	return s
}

// boundedBuffer keeps the first max bytes written and remembers overflow.
type boundedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room < len(p) {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// identityVar reports whether kv sets the author or committer identity,
// which host git may keep.
func identityVar(kv string) bool {
	name, _, _ := strings.Cut(kv, "=")
	switch name {
	case "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL":
		return true
	}
	return false
}
