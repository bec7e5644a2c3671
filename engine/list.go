package engine

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
)

// ContainerSummary is one row of List.
type ContainerSummary struct {
	// ID is the full container id.
	ID string
	// Name is the container name without the engine's leading slash.
	Name string
	// Image is the image the container was created from.
	Image string
	// State is the engine's state word (created, running, exited, ...).
	State string
	// Status is the engine's human status ("Up 5 minutes", ...).
	Status string
	// Created is the creation time.
	Created time.Time
	// Labels are the container's labels.
	Labels map[string]string
	// SizeRw and SizeRootFs are set when List was asked for sizes.
	SizeRw, SizeRootFs int64
}

// List returns the containers carrying every given label (an empty value
// matches the key alone) in one engine call, newest first. all includes
// stopped containers; size asks the engine for writable-layer sizes. On
// an engine whose Ping said it is Podman, the call is Podman's native
// list (GET /libpod/containers/json), which skips the compatible API's
// per-container network and image lookups.
func (c *Conn) List(ctx context.Context, labels map[string]string, all, size bool) ([]ContainerSummary, error) {
	args := filters.NewArgs()
	for k, v := range labels {
		if v == "" {
			args.Add("label", k)
		} else {
			args.Add("label", k+"="+v)
		}
	}
	if c.podman.Load() {
		out, err := c.listLibpod(ctx, args, all, size)
		if err != nil {
			return nil, c.classify("list", "", err)
		}
		sortNewestFirst(out)
		return out, nil
	}
	rows, err := c.api.ContainerList(ctx, container.ListOptions{All: all, Size: size, Filters: args})
	if err != nil {
		return nil, c.classify("list", "", err)
	}
	out := make([]ContainerSummary, 0, len(rows))
	for _, r := range rows {
		s := ContainerSummary{ID: r.ID, Image: r.Image, State: string(r.State), Status: r.Status,
			Created: time.Unix(r.Created, 0), Labels: r.Labels, SizeRw: r.SizeRw, SizeRootFs: r.SizeRootFs}
		if len(r.Names) > 0 {
			s.Name = strings.TrimPrefix(r.Names[0], "/")
		}
		out = append(out, s)
	}
	sortNewestFirst(out)
	return out, nil
}

func sortNewestFirst(rows []ContainerSummary) {
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Created.After(rows[j].Created) })
}
