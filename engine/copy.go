package engine

import (
	"context"
	"fmt"
	"io"
	"path"

	"github.com/docker/docker/api/types/container"

	"github.com/podbot/podbot/errdefs"
)

// CopyTar extracts the tar stream r into the container at dstPath, which
// must be an absolute, clean directory path that exists in the container.
// An existing directory is never replaced by a file.
func (c *Conn) CopyTar(ctx context.Context, id, dstPath string, r io.Reader) error {
	if !path.IsAbs(dstPath) || path.Clean(dstPath) != dstPath {
		return &errdefs.ContainerError{Op: "copy", Endpoint: c.ep.String(), Container: id, Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("destination %q must be an absolute, clean path inside the container", dstPath)}
	}
	if err := c.api.CopyToContainer(ctx, id, dstPath, r, container.CopyToContainerOptions{}); err != nil {
		return c.classify("copy", id, err)
	}
	return nil
}
