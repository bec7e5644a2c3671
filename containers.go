package podbot

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// Container is one container as podbot's operator commands show it.
type Container struct {
	// ID is the full container id.
	ID string `json:"id"`
	// Name is the container name without a leading slash.
	Name string `json:"name"`
	// Image is the image the container was created from.
	Image string `json:"image"`
	// State is the engine's state word (created, running, exited, ...).
	State string `json:"state"`
	// Status is the engine's human status ("Up 5 minutes", ...); empty when
	// the container was looked up by reference rather than listed.
	Status string `json:"status,omitempty"`
	// Created is the creation time.
	Created time.Time `json:"created"`
	// Labels are the container's labels.
	Labels map[string]string `json:"labels"`
	// SizeRw is the writable layer's size in bytes, when asked for.
	SizeRw int64 `json:"size_rw,omitempty"`
	// SizeRootFs is the total size in bytes, when asked for.
	SizeRootFs int64 `json:"size_root_fs,omitempty"`
}

// Managed reports whether podbot created the container (label podbot.managed=true).
func (c Container) Managed() bool { return c.Labels[launchplan.LabelManaged] == "true" }

// Running reports whether the container is running.
func (c Container) Running() bool { return c.State == "running" }

// maxRefLen bounds a container reference; engine names and ids are shorter.
const maxRefLen = 128

// refPattern is what a container name, id or id prefix may look like. It
// keeps a reference from smuggling a path into the Engine API URL.
var refPattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// ResolveContainer looks a container up by name, full id or unique id
// prefix. It refuses a container podbot did not create (no
// podbot.managed=true label) with reason errdefs.ErrRefused unless allowForeign is
// set. An unknown reference has reason errdefs.ErrNotFound; an ambiguous id
// prefix is refused by the engine.
func ResolveContainer(ctx context.Context, conn *engine.Conn, ref string, allowForeign bool) (Container, error) {
	if len(ref) > maxRefLen || !refPattern.MatchString(ref) {
		return Container{}, &errdefs.ContainerError{Op: "resolve", Container: sanitizeRef(ref), Reason: errdefs.ErrInvalidValue,
			Msg:  "a container reference must be a name, an id or an id prefix (letters, digits, '.', '_', '-')",
			Hint: "list podbot's containers with `podbot ps -a`"}
	}
	info, err := conn.Inspect(ctx, ref, false)
	if err != nil {
		var ce *errdefs.ContainerError
		if errors.Is(err, errdefs.ErrNotFound) && errors.As(err, &ce) && ce.Hint == "" {
			ce.Msg = "no container has this name, id or id prefix"
			ce.Hint = "list podbot's containers with `podbot ps -a`"
		}
		return Container{}, err
	}
	c := Container{ID: info.ID, Name: strings.TrimPrefix(info.Name, "/")}
	if info.Config != nil {
		c.Image, c.Labels = info.Config.Image, info.Config.Labels
	}
	if info.State != nil {
		c.State = string(info.State.Status)
	}
	if t, err := time.Parse(time.RFC3339Nano, info.Created); err == nil {
		c.Created = t
	}
	if !allowForeign && !c.Managed() {
		return Container{}, &errdefs.ContainerError{Op: "resolve", Container: ref, Reason: errdefs.ErrRefused,
			Msg:  "container " + c.Name + " was not created by podbot (no " + launchplan.LabelManaged + "=true label)",
			Hint: "pass --any to act on it anyway"}
	}
	return c, nil
}

// sanitizeRef makes a refused reference safe to show: bounded, no control characters.
func sanitizeRef(ref string) string {
	if len(ref) > maxRefLen {
		ref = ref[:maxRefLen] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, ref)
}

// ListOptions selects the containers List returns.
type ListOptions struct {
	// All includes stopped containers.
	All bool
	// Size asks the engine for the writable-layer and total sizes (slower).
	Size bool
	// Labels are extra label filters (an empty value matches the key alone),
	// added to podbot.managed=true.
	Labels map[string]string
}

// List returns podbot's containers (label podbot.managed=true), newest
// first, in one engine call.
func List(ctx context.Context, conn *engine.Conn, opts ListOptions) ([]Container, error) {
	labels := map[string]string{launchplan.LabelManaged: "true"}
	for k, v := range opts.Labels {
		labels[k] = v
	}
	rows, err := conn.List(ctx, labels, opts.All, opts.Size)
	if err != nil {
		return nil, err
	}
	out := make([]Container, 0, len(rows))
	for _, r := range rows {
		out = append(out, Container{ID: r.ID, Name: r.Name, Image: r.Image, State: r.State, Status: r.Status,
			Created: r.Created, Labels: r.Labels, SizeRw: r.SizeRw, SizeRootFs: r.SizeRootFs})
	}
	return out, nil
}
