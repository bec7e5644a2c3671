package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/docker/docker/api/types/image"

	"github.com/podbot/podbot/errdefs"
)

// maxPullMessage bounds one progress message of a pull stream.
const maxPullMessage = 1 << 20

// PullEvent reports progress of an image pull.
type PullEvent struct {
	// Ref is the image being pulled.
	Ref string
	// Attempt counts pull attempts from 1.
	Attempt int
	// Status is the engine's status line ("Downloading", "Pull complete", ...).
	Status string
	// Layer is the layer id the status is about, if any.
	Layer string
	// Current and Total are byte counts for the layer, when known.
	Current, Total int64
}

// pullMessage is one line of the engine's pull progress stream.
type pullMessage struct {
	Status         string `json:"status"`
	ID             string `json:"id"`
	ProgressDetail struct {
		Current int64 `json:"current"`
		Total   int64 `json:"total"`
	} `json:"progressDetail"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// IsLocalOnly reports whether ref names an image that only exists locally
// (registry "localhost"), which podbot builds and never pulls.
func IsLocalOnly(ref string) bool {
	named, err := reference.ParseNormalizedNamed(strings.TrimSpace(ref))
	if err != nil {
		return strings.HasPrefix(strings.TrimSpace(ref), "localhost/")
	}
	return reference.Domain(named) == "localhost"
}

// EnsureImage makes sure ref is present, pulling it when it is missing. A
// missing localhost/ image is never pulled: the error (reason
// errdefs.ErrNotFound) says to build it with `podbot image build`.
func (c *Conn) EnsureImage(ctx context.Context, ref string, progress func(PullEvent)) error {
	_, err := c.api.ImageInspect(ctx, ref)
	if err == nil {
		return nil
	}
	cerr := c.classify("inspect image", ref, err)
	if !errors.Is(cerr, errdefs.ErrNotFound) {
		return cerr
	}
	if IsLocalOnly(ref) {
		return &errdefs.ContainerError{Op: "find image", Endpoint: c.ep.String(), Container: ref, Reason: errdefs.ErrNotFound,
			Msg:  fmt.Sprintf("image %s is not present, and localhost/ images are built locally, never pulled", ref),
			Hint: "build it with `podbot image build` (or `podbot image build --bootstrap` without a registry)"}
	}
	return c.Pull(ctx, ref, progress)
}

// Pull pulls ref, reporting progress to the callback (which may be nil).
// Transient failures (engine 5xx, connection problems, timeouts) are retried
// with exponential backoff (see WithPullRetry); a missing image or denied
// access is not.
func (c *Conn) Pull(ctx context.Context, ref string, progress func(PullEvent)) error {
	delay := c.opts.pullBackoff
	var err error
	for attempt := 1; attempt <= c.opts.pullAttempts; attempt++ {
		err = c.pullOnce(ctx, ref, attempt, progress)
		if err != nil && ctx.Err() != nil {
			return c.classify("pull", ref, ctx.Err())
		}
		if err == nil || !retryablePull(err) || attempt == c.opts.pullAttempts {
			break
		}
		c.logger().Warn("image pull failed, retrying", "image", ref, "attempt", attempt, "delay", delay, "error", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return c.classify("pull", ref, ctx.Err())
		case <-t.C:
		}
		delay *= 2
	}
	return err
}

func (c *Conn) pullOnce(ctx context.Context, ref string, attempt int, progress func(PullEvent)) error {
	rc, err := c.api.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return c.classify("pull", ref, err)
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 0, 64*1024), maxPullMessage)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var m pullMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			return &errdefs.ContainerError{Op: "pull", Endpoint: c.ep.String(), Container: ref, Reason: errdefs.ErrUnavailable,
				Msg: "the engine sent a malformed progress message", Err: boundedError{err}}
		}
		if msg := m.Error; msg != "" || m.ErrorDetail != nil {
			if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
				msg = m.ErrorDetail.Message
			}
			return pullStreamError(c.ep.String(), ref, msg)
		}
		if progress != nil {
			progress(PullEvent{Ref: ref, Attempt: attempt, Status: truncate(m.Status, maxInfoText), Layer: truncate(m.ID, maxInfoText),
				Current: m.ProgressDetail.Current, Total: m.ProgressDetail.Total})
		}
	}
	if err := sc.Err(); err != nil {
		return c.classify("pull", ref, err)
	}
	return nil
}

// pullStreamError classifies an error the engine reported inside the pull
// stream, where there is no HTTP status to go by.
func pullStreamError(endpoint, ref, msg string) error {
	lower := strings.ToLower(msg)
	e := &errdefs.ContainerError{Op: "pull", Endpoint: endpoint, Container: ref, Reason: errdefs.ErrUnavailable, Msg: truncate(msg, maxErrorText)}
	switch {
	case strings.Contains(lower, "not found") || strings.Contains(lower, "manifest unknown") || strings.Contains(lower, "does not exist"):
		e.Reason = errdefs.ErrNotFound
		e.Hint = "check the image name and tag"
	case strings.Contains(lower, "denied") || strings.Contains(lower, "unauthorized") || strings.Contains(lower, "authentication required"):
		e.Reason = errdefs.ErrPermissionDenied
		e.Hint = "log in to the registry with the engine's CLI, or use a public image"
	}
	return e
}

func retryablePull(err error) bool {
	return errors.Is(err, errdefs.ErrUnavailable) || errors.Is(err, errdefs.ErrConnectionFailed) || errors.Is(err, errdefs.ErrTimeout)
}
