package podbot

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"path"
	"strconv"
	"time"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/termsafe"
)

// cloneFile is a file a local clone puts into the sandbox.
type cloneFile struct {
	// name is the file's base name (podbot's own, never the agent's).
	name string
	// size is its length in bytes, and data its content.
	size int64
	data io.Reader
}

// cloneIO is how a local clone reaches its sandbox: the engine's exec and
// copy API for a container (engineCloneIO), pods/exec for a Pod
// (kubeCloneIO, built with -tags kubernetes). Only the transport differs:
// the bundle, the scripts run in the sandbox, the bounds on what comes
// back and the host's checks of it are the same on both.
type cloneIO interface {
	// run runs argv in the sandbox as the agent's user, with stdin (nil
	// for none), and returns its exit status; an error means the exec
	// itself failed.
	run(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error)
	// makeDir creates dir (one level) owned by the agent, for when the
	// agent itself may not.
	makeDir(ctx context.Context, dir string) error
	// put writes files into the existing directory dir, mode 0644.
	put(ctx context.Context, dir string, files []cloneFile) error
}

// engineCloneIO is cloneIO for container id on the engine; execs run as
// plan.User ("" is the container's configured user).
type engineCloneIO struct {
	conn *engine.Conn
	id   string
	plan launchplan.Plan
}

func (e engineCloneIO) run(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return e.conn.Exec(ctx, e.id, engine.ExecOptions{Cmd: argv, User: e.plan.User, Stdin: stdin, Stdout: stdout, Stderr: stderr})
}

func (e engineCloneIO) makeDir(ctx context.Context, dir string) error {
	return makeDir(ctx, e.conn, e.id, dir, e.plan)
}

// put sends files as one tar stream through the engine's copy API.
func (e engineCloneIO) put(ctx context.Context, dir string, files []cloneFile) error {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		var err error
		for _, f := range files {
			if err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: f.size, ModTime: time.Now()}); err != nil {
				break
			}
			if _, err = io.Copy(tw, f.data); err != nil {
				break
			}
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	if err := e.conn.CopyTar(ctx, e.id, dir, pr); err != nil {
		pr.CloseWithError(err)
		return err
	}
	return nil
}

// putScript writes its stdin to the new file $1/$2 (an existing one is
// refused, set -C) and checks that it holds $3 bytes: a stream cut short
// is an error, not a truncated bundle.
const putScript = `set -euC
umask 022
cat > "$1/$2"
n=$(wc -c < "$1/$2")
if [ "$n" -ne "$3" ]; then echo "$2: got $n of $3 bytes" >&2; exit 1; fi
`

// execFunc is cloneIO.run.
type execFunc func(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error)

// putByExec writes each file into dir in sandbox name with one exec of
// putScript, the file on its stdin: the transport of a sandbox without a
// copy API (a Pod).
func putByExec(ctx context.Context, run execFunc, name, dir string, files []cloneFile) error {
	for _, f := range files {
		var errBuf bytes.Buffer
		code, err := run(ctx, []string{"sh", "-c", putScript, "sh", dir, f.name, strconv.FormatInt(f.size, 10)},
			io.LimitReader(f.data, f.size), nil, &limitedBuffer{buf: &errBuf, max: maxStepOutput})
		if err != nil {
			return err
		}
		if code != 0 {
			return &errdefs.ContainerError{Op: "copy in", Container: name, Reason: errdefs.ErrExecFailed,
				Msg: "writing " + path.Join(dir, f.name) + " in the sandbox exited with status " + strconv.Itoa(code) + ": " + termsafe.Line(lastLines(errBuf.String(), 3))}
		}
	}
	return nil
}
