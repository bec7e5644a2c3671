package podbot

import (
	"context"
	"errors"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"

	"github.com/podbot/podbot/engine"
)

// createdGrace keeps Prune away from a container another podbot is still
// starting: a container in state created is pruned only once it is older.
const createdGrace = time.Minute

// PruneOptions are the inputs of Prune.
type PruneOptions struct {
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
}

// PrunedImage is one dangling image Prune removed (or would remove).
type PrunedImage struct {
	// ID is the image id.
	ID string `json:"id"`
	// Size is the image size in bytes.
	Size int64 `json:"size"`
}

// PruneResult lists what Prune removed, or with DryRun would remove.
type PruneResult struct {
	// DryRun is set when nothing was removed.
	DryRun bool `json:"dry_run"`
	// Containers are stopped podbot containers.
	Containers []Container `json:"containers"`
	// Images are dangling (untagged) images built by podbot.
	Images []PrunedImage `json:"images"`
}

// Prune removes podbot's stopped containers (exited, dead, or created and
// never started for over a minute) and dangling images podbot built (label
// podbot.image.content). Running containers and other images are never
// touched. A failed removal does not stop the others; the failures are
// returned joined, with the result listing only what was removed.
func Prune(ctx context.Context, conn *engine.Conn, opts PruneOptions) (PruneResult, error) {
	res := PruneResult{DryRun: opts.DryRun, Containers: []Container{}, Images: []PrunedImage{}}
	all, err := List(ctx, conn, ListOptions{All: true})
	if err != nil {
		return res, err
	}
	var errs []error
	now := time.Now()
	for _, c := range all {
		switch c.State {
		case "exited", "dead", "stopped":
		case "created", "configured":
			if now.Sub(c.Created) < createdGrace {
				continue
			}
		default:
			continue
		}
		if !opts.DryRun {
			if err := conn.Remove(ctx, c.ID, false); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		res.Containers = append(res.Containers, c)
	}
	imgs, err := conn.API().ImageList(ctx, image.ListOptions{
		Filters: filters.NewArgs(filters.Arg("dangling", "true"), filters.Arg("label", ContentLabel)),
	})
	if err != nil {
		errs = append(errs, engine.Classify("list images", conn.Endpoint().String(), "", err))
		return res, errors.Join(errs...)
	}
	for _, im := range imgs {
		if !opts.DryRun {
			if _, err := conn.API().ImageRemove(ctx, im.ID, image.RemoveOptions{PruneChildren: true}); err != nil {
				errs = append(errs, engine.Classify("remove image", conn.Endpoint().String(), im.ID, err))
				continue
			}
		}
		res.Images = append(res.Images, PrunedImage{ID: im.ID, Size: im.Size})
	}
	return res, errors.Join(errs...)
}
