package podbot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/tokendaemon"
)

// DefaultStopTimeout is how long Stop waits after SIGTERM before the engine
// kills the container.
const DefaultStopTimeout = 10 * time.Second

// StopOptions are the inputs of Stop.
type StopOptions struct {
	// Timeout is the grace period between SIGTERM and SIGKILL; negative
	// means none, zero means DefaultStopTimeout.
	Timeout time.Duration
	// Any allows a container podbot did not create.
	Any bool
}

// Stop resolves ref (see ResolveContainer) and stops the container: SIGTERM,
// then SIGKILL after the timeout. Stopping a stopped container succeeds.
func Stop(ctx context.Context, conn *engine.Conn, ref string, opts StopOptions) (Container, error) {
	c, err := ResolveContainer(ctx, conn, ref, opts.Any)
	if err != nil {
		return Container{}, err
	}
	timeout := opts.Timeout
	switch {
	case timeout == 0:
		timeout = DefaultStopTimeout
	case timeout < 0:
		timeout = 0
	}
	if err := conn.Stop(ctx, c.ID, timeout); err != nil {
		return c, err
	}
	if c.Labels[egressnet.LabelMode] == string(egress.ModeAllowlist) {
		if err := conn.Stop(ctx, egressnet.ProxyName(egressNameOf(c)), timeout); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			return c, err
		}
	}
	return c, nil
}

// StartOptions are the inputs of Start.
type StartOptions struct {
	// Any allows a container podbot did not create.
	Any bool
	// RuntimeDir is $XDG_RUNTIME_DIR, where token directories live; a
	// container launched with a GitHub token needs it.
	RuntimeDir string
	// TokenSource mints the fresh installation token written before a
	// container launched with a GitHub token starts. Nil starts it with an
	// empty token directory: git cannot authenticate until a token daemon
	// (podbot token-daemon) writes one.
	TokenSource tokendaemon.TokenSource
	// Logger receives diagnostics (never token values); nil discards.
	Logger *slog.Logger
}

// StartResult is what Start did.
type StartResult struct {
	// Container is the container as resolved before the start.
	Container Container
	// WasRunning says the container was running already; nothing was done.
	WasRunning bool
	// TokenMount says the container was launched with a GitHub token
	// directory, which Start made again before starting it.
	TokenMount bool
	// TokenWritten says a fresh token is in that directory. It expires in
	// about an hour unless a token daemon keeps it fresh.
	TokenWritten bool
}

// Start resolves ref (see ResolveContainer) and starts a stopped container
// again: its init process runs, the agent does not (exec it, for example
// with podbot exec). Starting a running container succeeds and does
// nothing.
//
// A container launched with a GitHub token (label podbot.github_token=true)
// lost its token directory when it stopped; Start makes it again, with a
// fresh token from TokenSource when one is given, before the engine starts
// the container (the directory is a bind mount's source). If the start
// fails, the directory is removed again.
//
// The allowlisted host variables the agent got at launch are not in the
// container's configuration, so a started container does not have them: a
// command that needs them gets them at exec time (ExecOptions.Env).
func Start(ctx context.Context, conn *engine.Conn, ref string, opts StartOptions) (res StartResult, err error) {
	c, err := ResolveContainer(ctx, conn, ref, opts.Any)
	if err != nil {
		return res, err
	}
	res.Container = c
	if c.Running() {
		res.WasRunning = true
		return res, nil
	}
	if c.Labels[launchplan.LabelGitHubToken] == "true" {
		res.TokenMount = true
		var dir string
		var written bool
		dir, written, err = prepareTokenDir(ctx, conn, c, opts)
		defer func() { // err is Start's result: the start's failure too
			if err != nil && dir != "" {
				if rerr := os.RemoveAll(dir); rerr != nil {
					err = errors.Join(err, &errdefs.FilesystemError{Op: "remove", Path: dir, Msg: "cannot remove the token directory", Err: rerr})
				}
			}
		}()
		if err != nil {
			return res, err
		}
		res.TokenWritten = written
	}
	allowlist := c.Labels[egressnet.LabelMode] == string(egress.ModeAllowlist)
	if allowlist {
		if err = startProxy(ctx, conn, c); err != nil {
			return res, err
		}
	}
	if err = conn.Start(ctx, c.ID); err != nil {
		return res, err
	}
	if allowlist {
		// A restarted container has a new network namespace: close it again.
		if err = relockNetwork(ctx, conn, c); err != nil {
			cctx, cancel := engine.CleanupContext(ctx)
			defer cancel()
			_ = conn.Stop(cctx, c.ID, 0)
			return res, err
		}
	}
	return res, nil
}

// startProxy starts an allowlist sandbox's proxy again and checks that it
// kept the address the sandbox's HTTP_PROXY names.
func startProxy(ctx context.Context, conn *engine.Conn, c Container) error {
	name := egressnet.ProxyName(egressNameOf(c))
	if err := conn.Start(ctx, name); err != nil {
		return err
	}
	addr, err := proxyAddress(ctx, conn, name, egressnet.NetworkName(egressNameOf(c)))
	if err != nil {
		return err
	}
	if want := c.Labels[egressnet.LabelProxyAddr]; want != "" && want != addr.String() {
		return &errdefs.ContainerError{Op: "start egress proxy", Endpoint: conn.Endpoint().String(), Container: name,
			Reason: errdefs.ErrConflict, Msg: fmt.Sprintf("the egress proxy came back at %s, but the sandbox's HTTP_PROXY names %s", addr, want),
			Hint: "remove the sandbox and launch it again"}
	}
	return nil
}

// relockNetwork runs netlock again for a started allowlist sandbox, with
// the sidecar it mounts and its network's gateways.
func relockNetwork(ctx context.Context, conn *engine.Conn, c Container) error {
	in, err := conn.Inspect(ctx, c.ID, false)
	if err != nil {
		return err
	}
	sidecar := ""
	for _, m := range in.Mounts {
		if m.Destination == SidecarTarget {
			sidecar = m.Source
		}
	}
	if sidecar == "" {
		return &errdefs.ContainerError{Op: "netlock", Container: c.Name, Reason: errdefs.ErrNotFound, Msg: "the sandbox mounts no podbot-sidecar"}
	}
	info, err := conn.InspectNetwork(ctx, egressnet.NetworkName(egressNameOf(c)))
	if err != nil {
		return err
	}
	image := c.Image
	if in.Config != nil && in.Config.Image != "" {
		image = in.Config.Image
	}
	return lockNetwork(ctx, conn, c.ID, image, sidecar, info.Gateways)
}

// prepareTokenDir makes the token directory of c again (it is named after
// the container's name, as Launch made it) and writes a fresh token into
// it when opts has a source.
func prepareTokenDir(ctx context.Context, conn *engine.Conn, c Container, opts StartOptions) (string, bool, error) {
	if opts.RuntimeDir == "" {
		return "", false, &errdefs.ConfigError{Key: "XDG_RUNTIME_DIR", Reason: errdefs.ErrMissingRequired,
			Msg: "the container mounts a GitHub token directory under $XDG_RUNTIME_DIR/podbot; set XDG_RUNTIME_DIR to start it"}
	}
	if opts.TokenSource == nil {
		dirName := c.Name
		if d := c.Labels[LabelTokenDir]; d != "" {
			dirName = d // a claimed pool member's, named after the member
		}
		dir, err := tokendaemon.EnsureDir(opts.RuntimeDir, dirName)
		return dir, false, err
	}
	target, err := tokenTarget(c.Name, c.Labels, opts.RuntimeDir)
	if err != nil {
		return "", false, err
	}
	id := c.ID
	d, err := tokendaemon.New(tokendaemon.Options{
		ContainerID:  c.Name,
		DirName:      target.DirName,
		RuntimeDir:   opts.RuntimeDir,
		Source:       opts.TokenSource,
		Repositories: target.Repositories,
		GitOrigin:    target.GitOrigin,
		Vault:        target.Vault,
		Placeholder:  target.Placeholder,
		Logger:       opts.Logger,
		Alive:        func(ctx context.Context) (bool, error) { return containerRunning(ctx, conn, id) },
	})
	if err != nil {
		return "", false, err
	}
	if _, err := d.Prepare(ctx); err != nil {
		return d.Dir(), false, err
	}
	return d.Dir(), true, nil
}

// RemoveOptions are the inputs of Remove.
type RemoveOptions struct {
	// Force removes a running container (the engine kills it first).
	Force bool
	// Any allows a container podbot did not create.
	Any bool
	// Environ is the environment host git runs with when a local_clone
	// sandbox is checked for unfetched work.
	Environ []string
	// RuntimeDir is $XDG_RUNTIME_DIR: a claimed pool member's token
	// directory and scope file there (LabelTokenDir) go with it.
	RuntimeDir string
}

// Remove resolves ref (see ResolveContainer) and removes the container and
// its anonymous volumes, and a tool session's sidecar link directory. A
// running container needs Force.
func Remove(ctx context.Context, conn *engine.Conn, ref string, opts RemoveOptions) (Container, error) {
	c, err := ResolveContainer(ctx, conn, ref, opts.Any)
	if err != nil {
		return Container{}, err
	}
	if !opts.Force {
		// A local_clone sandbox's work lives only in it until fetched.
		lost, why, err := Unfetched(ctx, conn, c, opts.Environ)
		if err != nil {
			return c, err
		}
		if lost {
			return c, &errdefs.RepoError{Op: "rm", Repo: c.Name, Reason: errdefs.ErrRefused,
				Msg: "the sandbox holds work the host does not have: " + why, Hint: "fetch it first, or pass --force to discard it"}
		}
	}
	var link string
	if info, err := conn.Inspect(ctx, c.ID, false); err == nil {
		link = sidecarLinkDirOf(info)
	}
	if err := conn.Remove(ctx, c.ID, opts.Force); err != nil {
		return c, err
	}
	err = removeSidecarLink(link)
	ForgetLocalClone(ctx, c, opts.Environ)
	if c.Labels[egressnet.LabelMode] == string(egress.ModeAllowlist) {
		err = errors.Join(err, removeEgress(ctx, conn, egressNameOf(c), c.Labels[LabelEgressDir]))
	}
	err = errors.Join(err, removeMemberToken(opts.RuntimeDir, c.Labels))
	return c, err
}

// LogsOptions are the inputs of Logs.
type LogsOptions struct {
	// Follow streams new output until the container stops or ctx ends.
	Follow bool
	// Tail shows only this many lines from the end; 0 shows all.
	Tail int
	// Any allows a container podbot did not create.
	Any bool
}

// Logs resolves ref (see ResolveContainer) and copies the container's
// stdout to stdout and its stderr to stderr.
func Logs(ctx context.Context, conn *engine.Conn, ref string, opts LogsOptions, stdout, stderr io.Writer) error {
	c, err := ResolveContainer(ctx, conn, ref, opts.Any)
	if err != nil {
		return err
	}
	return conn.Logs(ctx, c.ID, engine.LogsOptions{Follow: opts.Follow, Tail: opts.Tail}, stdout, stderr)
}
