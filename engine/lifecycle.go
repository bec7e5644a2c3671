package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"github.com/podbot/podbot/errdefs"
)

// Create creates a container named name (empty: the engine picks one) and
// returns its id. A missing image is pulled first (progress goes to the
// WithPullProgress callback); a missing localhost/ image is an error naming
// `podbot image build`. An empty image is refused before any engine call.
// If ctx is cancelled while the engine creates the container, the container
// is removed on a cleanup context so nothing is left behind.
func (c *Conn) Create(ctx context.Context, name string, cfg *container.Config, hc *container.HostConfig, nc *network.NetworkingConfig) (string, error) {
	if cfg == nil || strings.TrimSpace(cfg.Image) == "" {
		return "", &errdefs.ConfigError{Key: "image", Reason: errdefs.ErrMissingRequired,
			Msg: "no image is configured; set image in the config file, PODBOT_IMAGE or --image"}
	}
	if err := c.EnsureImage(ctx, cfg.Image, c.opts.pullProgress); err != nil {
		return "", err
	}
	resp, err := c.api.ContainerCreate(ctx, cfg, hc, nc, nil, name)
	if err != nil {
		cerr := c.classify("create", name, err)
		if ctx.Err() != nil && name != "" && !errors.Is(cerr, errdefs.ErrAlreadyExists) {
			// The engine may have created it after we stopped listening.
			c.removeAfterFailure(ctx, name)
		}
		return "", cerr
	}
	for _, w := range resp.Warnings {
		c.logger().Warn("engine warning on create", "container", name, "warning", truncate(w, maxErrorText))
	}
	if ctx.Err() != nil {
		c.removeAfterFailure(ctx, resp.ID)
		return "", c.classify("create", name, ctx.Err())
	}
	return resp.ID, nil
}

// Start starts a created container. Subscribe with Wait first (or use
// StartAndWait) if the exit status matters, so a fast exit is not missed.
func (c *Conn) Start(ctx context.Context, id string) error {
	if err := c.api.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return c.classify("start", id, err)
	}
	return nil
}

// CreateAndStart creates and starts a container. If anything fails after
// the container exists (including Ctrl-C cancelling ctx), the container is
// force-removed on a cleanup context and the first error is returned.
func (c *Conn) CreateAndStart(ctx context.Context, name string, cfg *container.Config, hc *container.HostConfig, nc *network.NetworkingConfig) (string, error) {
	id, err := c.Create(ctx, name, cfg, hc, nc)
	if err != nil {
		return "", err
	}
	if err := c.Start(ctx, id); err != nil {
		c.removeAfterFailure(ctx, id)
		return "", err
	}
	return id, nil
}

// ExitStatus is the outcome of waiting for a container.
type ExitStatus struct {
	// Code is the exit code the engine reported (see errdefs.ClampExitCode).
	Code int64
	// Err is set when the wait itself failed.
	Err error
}

// Wait subscribes to the container's next exit and returns a channel that
// delivers exactly one ExitStatus and is then closed. It returns once the
// engine has acknowledged the subscription, so calling Start afterwards
// never misses a fast exit.
func (c *Conn) Wait(ctx context.Context, id string) (<-chan ExitStatus, error) {
	ch, _, err := c.wait(ctx, id)
	return ch, err
}

func (c *Conn) wait(ctx context.Context, id string) (<-chan ExitStatus, context.CancelFunc, error) {
	wctx, cancel := context.WithCancel(ctx)
	resC, errC := c.api.ContainerWait(wctx, id, container.WaitConditionNextExit)
	select {
	case err := <-errC:
		cancel()
		return nil, nil, c.classify("wait", id, err)
	default:
	}
	out := make(chan ExitStatus, 1)
	go func() {
		defer close(out)
		defer cancel()
		select {
		case res := <-resC:
			st := ExitStatus{Code: res.StatusCode}
			if res.Error != nil && res.Error.Message != "" {
				st.Err = &errdefs.ContainerError{Op: "wait", Endpoint: c.ep.String(), Container: id, Msg: truncate(res.Error.Message, maxErrorText)}
			}
			out <- st
		case err := <-errC:
			out <- ExitStatus{Code: -1, Err: c.classify("wait", id, err)}
		}
	}()
	return out, cancel, nil
}

// StartAndWait subscribes to the container's exit, then starts it. The
// channel delivers one ExitStatus when the container exits.
func (c *Conn) StartAndWait(ctx context.Context, id string) (<-chan ExitStatus, error) {
	ch, cancel, err := c.wait(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx, id); err != nil {
		cancel()
		return nil, err
	}
	return ch, nil
}

// Stop asks the container to stop, giving it timeout (rounded up to whole
// seconds) before the engine kills it. If the stop call itself fails for
// any reason but a missing container, Stop sends SIGKILL. Stopping a
// container that is not running is not an error.
func (c *Conn) Stop(ctx context.Context, id string, timeout time.Duration) error {
	if timeout < 0 {
		timeout = 0
	}
	secs := int(math.Ceil(timeout.Seconds()))
	err := c.api.ContainerStop(ctx, id, container.StopOptions{Timeout: &secs})
	if err == nil {
		return nil
	}
	stopErr := c.classify("stop", id, err)
	if errors.Is(stopErr, errdefs.ErrNotFound) || ctx.Err() != nil {
		return stopErr
	}
	if kerr := c.api.ContainerKill(ctx, id, "KILL"); kerr != nil {
		kerr = c.classify("kill", id, kerr)
		if errors.Is(kerr, errdefs.ErrConflict) {
			return nil // not running any more
		}
		return fmt.Errorf("%w (and then: %w)", stopErr, kerr)
	}
	return nil
}

// Remove removes a container and its anonymous volumes; force removes a
// running one. A missing container is an error with reason ErrNotFound.
func (c *Conn) Remove(ctx context.Context, id string, force bool) error {
	if err := c.api.ContainerRemove(ctx, id, container.RemoveOptions{Force: force, RemoveVolumes: true}); err != nil {
		return c.classify("remove", id, err)
	}
	return nil
}

// Inspect returns the engine's view of a container. With size set the
// engine also computes the writable-layer size (SizeRw) and the total size
// (SizeRootFs), which is slower.
func (c *Conn) Inspect(ctx context.Context, id string, size bool) (container.InspectResponse, error) {
	resp, _, err := c.api.ContainerInspectWithRaw(ctx, id, size)
	if err != nil {
		return container.InspectResponse{}, c.classify("inspect", id, err)
	}
	return resp, nil
}
