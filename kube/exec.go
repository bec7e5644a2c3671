package kube

import (
	"context"
	"errors"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/podbot/podbot/errdefs"
)

// TermSize is a terminal size in character cells.
type TermSize struct {
	Rows, Cols uint16
}

// ExecOptions are the inputs of Exec.
type ExecOptions struct {
	// Container is the Pod's container to run in; empty is the sandbox
	// container (ContainerName).
	Container string
	// Cmd is the command and its arguments; it must not be empty. It
	// travels in the exec request's URL, so it must hold no secret.
	Cmd []string
	// WorkingDir, when set, is where the command runs (through the image's
	// /bin/sh, since pods/exec has no working-directory field).
	WorkingDir string
	// TTY allocates a terminal; Stderr is then unused.
	TTY bool
	// Stdin, when set, is copied to the command; its EOF closes the
	// command's stdin.
	Stdin io.Reader
	// Stdout and Stderr receive the output; nil discards it.
	Stdout, Stderr io.Writer
	// InitialSize and Resize are a TTY exec's terminal sizes.
	InitialSize TermSize
	Resize      <-chan TermSize
}

// Exec runs a command in the sandbox container of Pod name through the
// pods/exec subresource (WebSocket, SPDY when the server refuses the
// upgrade) and returns its exit status clamped to 0..255. An error means
// the exec itself failed, not the command.
func (c *Client) Exec(ctx context.Context, name string, opts ExecOptions) (int, error) {
	if len(opts.Cmd) == 0 {
		return 0, &errdefs.ContainerError{Op: "kubernetes exec", Container: name, Reason: errdefs.ErrInvalidValue, Msg: "no command given"}
	}
	if c.config == nil {
		return 0, &errdefs.ContainerError{Op: "kubernetes exec", Container: name, Reason: errdefs.ErrUnsupported, Msg: "this client has no REST config"}
	}
	// The size queue's goroutine ends with this context, so with the exec.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := opts.Cmd
	if opts.WorkingDir != "" {
		if !cleanPath(opts.WorkingDir) {
			return 0, &errdefs.ContainerError{Op: "kubernetes exec", Container: name, Reason: errdefs.ErrInvalidValue,
				Msg: "working directory " + bounded(opts.WorkingDir) + " must be an absolute, clean path"}
		}
		cmd = append([]string{"/bin/sh", "-c", `cd "$1" && shift && exec "$@"`, "sh", opts.WorkingDir}, cmd...)
	}
	container := opts.Container
	if container == "" {
		container = ContainerName
	}
	peo := &corev1.PodExecOptions{
		Container: container,
		Command:   cmd,
		Stdin:     opts.Stdin != nil,
		Stdout:    true,
		Stderr:    !opts.TTY,
		TTY:       opts.TTY,
	}
	req := c.cs.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(c.namespace).Name(name).SubResource("exec").
		VersionedParams(peo, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(c.config, "GET", req.URL().String())
	if err != nil {
		return 0, c.classify("exec", name, err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.config, "POST", req.URL())
	if err != nil {
		return 0, c.classify("exec", name, err)
	}
	executor, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return 0, c.classify("exec", name, err)
	}
	stdin := opts.Stdin
	if opts.TTY && stdin != nil {
		// On a terminal the end of input is Ctrl-D, sent in band. Closing
		// a TTY exec's stdin makes the kubelet drop the terminal's pending
		// output, so the end of stdin is held back until the exec ends.
		stdin = &holdEOF{r: stdin, done: ctx.Done()}
	}
	streams := remotecommand.StreamOptions{Stdin: stdin, Stdout: orDiscard(opts.Stdout), Tty: opts.TTY}
	if !opts.TTY {
		streams.Stderr = orDiscard(opts.Stderr)
	} else {
		q := &sizeQueue{initial: opts.InitialSize, resize: opts.Resize, done: ctx.Done()}
		streams.TerminalSizeQueue = q
	}
	err = executor.StreamWithContext(ctx, streams)
	var exit utilexec.CodeExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return errdefs.ClampExitCode(int64(exit.Code)), nil
	}
	return 0, c.classify("exec", name, err)
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// sizeQueue hands remotecommand the initial terminal size, then each resize.
type sizeQueue struct {
	initial TermSize
	sent    bool
	resize  <-chan TermSize
	done    <-chan struct{}
}

// Next blocks until the next size; nil ends the queue.
func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	if !q.sent {
		q.sent = true
		if q.initial.Rows > 0 && q.initial.Cols > 0 {
			return &remotecommand.TerminalSize{Width: q.initial.Cols, Height: q.initial.Rows}
		}
	}
	if q.resize == nil {
		<-q.done
		return nil
	}
	select {
	case s, ok := <-q.resize:
		if !ok {
			return nil
		}
		return &remotecommand.TerminalSize{Width: s.Cols, Height: s.Rows}
	case <-q.done:
		return nil
	}
}

// holdEOF passes reads through but returns the end of input only once
// done is closed.
type holdEOF struct {
	r    io.Reader
	done <-chan struct{}
}

func (h *holdEOF) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if err == io.EOF {
		if n > 0 {
			return n, nil
		}
		<-h.done
	}
	return n, err
}
