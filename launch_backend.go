package podbot

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path"
	"time"

	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// launchBackend is where a launched sandbox lives: a container on the
// local engine (engineBackend) or a Pod on a cluster (the kubernetes
// backend, built with -tags kubernetes). Launch, Run and Host run one
// sequence of steps; the steps that depend on where the sandbox is go
// through this interface. Exec makes it a runflow.Execer and a
// hostflow.Execer, so the agent attaches the same way on both.
type launchBackend interface {
	// Exec runs a command in the sandbox and returns its exit status.
	Exec(ctx context.Context, id string, opts engine.ExecOptions) (int, error)
	// check refuses, with an *errdefs.ConfigError, launch options the
	// backend cannot honour; it runs first, before the request is built.
	check(opts LaunchOptions) error
	// adapt checks the normalized plan against what the backend can do
	// and adapts the plan to it; it runs before anything is made.
	adapt(opts LaunchOptions, req launchplan.Request, plan *launchplan.Plan) error
	// ensureImage makes the plan's image available.
	ensureImage(ctx context.Context, image string) error
	// start creates and starts the sandbox, with arch (nil for none) and
	// the plan's agent variables available to installCredentials and to
	// the agent's exec; it returns the sandbox's id. An interrupted or
	// failed start leaves nothing behind.
	start(ctx context.Context, plan launchplan.Plan, arch *creds.Archive) (string, error)
	// installCredentials puts arch into the agent's home in the sandbox.
	installCredentials(ctx context.Context, sb *Sandbox, arch *creds.Archive) error
	// stop stops a kept sandbox after its agent exited.
	stop(ctx context.Context, id string, timeout time.Duration) error
	// remove removes the sandbox and what belongs to it; a missing one is
	// not an error.
	remove(ctx context.Context, id string) error
}

// cloneCarrier is a backend that reaches a local clone's sandbox without
// the engine (a Pod, through pods/exec).
type cloneCarrier interface {
	// localCloneIO is the transport to sandbox id, as the agent's user.
	localCloneIO(id string) cloneIO
}

// engineBackend is the local container engine. Embedding the connection
// passes its ExecStream on, so hostflow bridges over the engine's stream.
type engineBackend struct {
	*engine.Conn
}

func (engineBackend) check(LaunchOptions) error { return nil }

func (engineBackend) adapt(LaunchOptions, launchplan.Request, *launchplan.Plan) error { return nil }

func (b engineBackend) ensureImage(ctx context.Context, image string) error {
	return b.EnsureImage(ctx, image, nil)
}

func (b engineBackend) start(ctx context.Context, plan launchplan.Plan, _ *creds.Archive) (string, error) {
	return startPlan(ctx, b.Conn, plan)
}

// installCredentials makes the agent's home (when the plan names one) and
// copies arch into it through the engine's copy API.
func (b engineBackend) installCredentials(ctx context.Context, sb *Sandbox, arch *creds.Archive) error {
	if err := b.prepareHome(ctx, sb); err != nil {
		return err
	}
	if arch == nil {
		return nil
	}
	return b.CopyTar(ctx, sb.ID, arch.TargetHome, arch.Reader())
}

// prepareHome makes the plan's home directory (a host-mount agent's, which
// runs as a uid the image does not know) owned by the agent's user, mode
// 0700. The engine's copy API applies the tar header's owner as the host's
// root, so this needs no capability inside the container.
func (b engineBackend) prepareHome(ctx context.Context, sb *Sandbox) error {
	if sb.Plan.Home == "" {
		return nil
	}
	uid, gid, ok := sb.Plan.NumericUser()
	if !ok {
		return nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Typeflag: tar.TypeDir, Name: path.Base(sb.Plan.Home) + "/", Mode: 0o700, Uid: uid, Gid: gid,
		ModTime: time.Now()}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return b.CopyTar(ctx, sb.ID, path.Dir(sb.Plan.Home), &buf)
}

func (b engineBackend) stop(ctx context.Context, id string, timeout time.Duration) error {
	if err := b.Stop(ctx, id, timeout); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		return err
	}
	return nil
}

func (b engineBackend) remove(ctx context.Context, id string) error {
	if err := b.Remove(ctx, id, true); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		return err
	}
	return nil
}

// backend is where sb lives: its launch backend, or the engine behind it
// for a Sandbox made without one.
func (sb *Sandbox) backend() launchBackend {
	if sb.be == nil {
		return engineBackend{sb.conn}
	}
	return sb.be
}

// tokenCarrier is a launch backend that puts the GitHub token into the
// sandbox itself (the kubernetes backend): Launch asks it instead of
// making a token directory on the host.
type tokenCarrier interface {
	// prepareToken makes the sandbox's token daemon (sb.token), mints the
	// first token and adapts plan to the token's scope and askpass
	// program; the token enters the sandbox when it starts.
	prepareToken(ctx context.Context, sb *Sandbox, opts LaunchOptions, plan *launchplan.Plan, logger *slog.Logger) error
}

// vaultCarrier is a launch backend that gives the credential vault to an
// egress proxy of its own (the kubernetes backend's proxy Pod) and the
// sandbox its trust files as it starts: Launch hands it the vault instead
// of writing the engine's vault and trust directories.
type vaultCarrier interface {
	// carryVault keeps v for start; v's values go to the proxy alone.
	carryVault(v *vault) error
}
