package sandbox

import (
	"context"
	"fmt"
	"io"

	"github.com/podbot/podbot/errdefs"
)

// RemoteRuntime runs the container backend's sandboxes where the host
// has no path into them, such as Pods on a Kubernetes cluster: the
// workspace lives inside the sandbox, and podbot-sidecar is put there by
// the runtime (at SidecarTarget) instead of being bind-mounted. Package
// sandbox drives it exactly as it drives an engine: the sandbox is made
// on the first call, the sidecar serves MCP over one stream, every call
// is one JSON-RPC round trip on it. Implementations must be safe for
// concurrent use.
type RemoteRuntime interface {
	// StartSandbox creates the sandbox called name for session sessionID,
	// podbot-sidecar in place and /workspace writable, and returns its id
	// once it runs. A failed or interrupted start leaves nothing behind.
	StartSandbox(ctx context.Context, sessionID, name string) (id string, err error)
	// AttachSidecar starts argv (podbot-sidecar serve ...) in sandbox id
	// over one exec stream; ctx bounds the start only.
	AttachSidecar(ctx context.Context, id string, argv []string) (*RemoteStream, error)
	// SandboxRunning reports whether sandbox id exists and runs.
	SandboxRunning(ctx context.Context, id string) (bool, error)
	// RemoveSandbox removes sandbox id; a missing one is not an error.
	RemoveSandbox(ctx context.Context, id string) error
}

// RemoteStream is one exec running podbot-sidecar serve.
type RemoteStream struct {
	// Stdout carries the sidecar's MCP messages; it ends when the exec
	// does, and Close must unblock a pending Read.
	Stdout io.ReadCloser
	// Stdin takes podbot's; Close sends its end.
	Stdin io.WriteCloser
	// Stderr returns the end of what the sidecar wrote to stderr.
	Stderr fmt.Stringer
	// Close ends the exec.
	Close func() error
}

// NewRemoteContainer prepares a container session whose sandboxes rt
// runs. It differs from NewContainer where a host path is missing: the
// workspace is the sandbox's own, so host mounts (opts.Mounts) are
// refused, Clone is refused, Info().WorkspaceDir is empty, and a
// sandbox made after the previous one failed or reached opts.MaxUptime
// starts with an empty workspace. opts.IdleTimeout does not apply: an idle
// sandbox is kept, since removing it would lose its workspace; Close
// removes it. The sidecar is always reached over an exec stream.
func NewRemoteContainer(_ context.Context, rt RemoteRuntime, opts ContainerOptions) (*Container, error) {
	if rt == nil {
		return nil, &errdefs.ConfigError{Key: "backend", Reason: errdefs.ErrMissingRequired, Msg: "a remote tool session needs a runtime"}
	}
	if len(opts.Mounts) > 0 {
		return nil, &errdefs.ConfigError{Key: "mount", Reason: errdefs.ErrUnsupported,
			Msg: fmt.Sprintf("--mount %s copies host files into a host workspace directory, which a sandbox on this backend does not have (its workspace lives in the sandbox); drop --mount, or write the files with write_file", opts.Mounts[0].HostPath)}
	}
	opts.IdleTimeout = 0
	opts.SidecarLink = SidecarLinkExec
	c, err := newCommon(BackendContainer, opts.Options)
	if err != nil {
		return nil, err
	}
	return &Container{common: c, copts: opts, rt: remoteAdapter{rt: rt, opts: opts}, shared: true, remote: true}, nil
}

// errRemote is the refusal of what needs the session's host directory.
func errRemote(op string) error {
	return &errdefs.ConfigError{Key: "backend", Reason: errdefs.ErrUnsupported,
		Msg: op + " needs a host workspace directory, which a tool session whose sandbox holds its own workspace (the kubernetes backend) does not have"}
}

// remoteAdapter is a RemoteRuntime as the container backend's runtime.
type remoteAdapter struct {
	rt   RemoteRuntime
	opts ContainerOptions
}

func (a remoteAdapter) start(ctx context.Context, spec containerSpec) (startedContainer, error) {
	id, err := a.rt.StartSandbox(ctx, spec.sessionID, spec.name)
	if err != nil {
		return startedContainer{}, err
	}
	return startedContainer{id: id, name: spec.name}, nil
}

func (a remoteAdapter) attach(ctx context.Context, id string) (*stream, error) {
	rs, err := a.rt.AttachSidecar(ctx, id, sidecarServeCommand(a.opts.NanoCPUs, a.opts.BatchScheduling == nil || *a.opts.BatchScheduling))
	if err != nil {
		return nil, err
	}
	stdout := &endReader{r: rs.Stdout, close: func() { rs.Stdout.Close() }, done: make(chan struct{})}
	stderr := rs.Stderr
	if stderr == nil {
		stderr = newTailBuffer(0)
	}
	return &stream{stdout: stdout, stdin: rs.Stdin, done: stdout.done, stderr: stderr, closeFn: rs.Close}, nil
}

func (a remoteAdapter) running(ctx context.Context, id string) (bool, error) {
	return a.rt.SandboxRunning(ctx, id)
}

func (a remoteAdapter) remove(ctx context.Context, id, _ string) error {
	return a.rt.RemoveSandbox(ctx, id)
}

func (remoteAdapter) linkOwner() (int, int, bool) { return 0, 0, false }

func (remoteAdapter) linkMissing() {}
