package engine

import (
	"archive/tar"
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

// ReadFile returns the content of the regular file at srcPath in the
// container, read through the engine's copy API (no exec), at most max
// bytes. A path that does not exist is an errdefs.ErrNotFound error; a
// symbolic link, a directory or a file larger than max is refused.
func (c *Conn) ReadFile(ctx context.Context, id, srcPath string, max int64) ([]byte, error) {
	if !path.IsAbs(srcPath) || path.Clean(srcPath) != srcPath {
		return nil, &errdefs.ContainerError{Op: "copy from", Endpoint: c.ep.String(), Container: id, Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("source %q must be an absolute, clean path inside the container", srcPath)}
	}
	rc, _, err := c.api.CopyFromContainer(ctx, id, srcPath)
	if err != nil {
		return nil, c.classify("copy from", id, err)
	}
	defer rc.Close()
	refuse := func(msg string) error {
		return &errdefs.ContainerError{Op: "copy from", Endpoint: c.ep.String(), Container: id, Reason: errdefs.ErrRefused,
			Msg: srcPath + ": " + msg}
	}
	tr := tar.NewReader(io.LimitReader(rc, max+64<<10))
	hdr, err := tr.Next()
	if err != nil {
		return nil, refuse("the engine sent no file: " + err.Error())
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil, refuse("not a regular file")
	}
	if hdr.Size > max {
		return nil, refuse(fmt.Sprintf("larger than %d bytes", max))
	}
	data, err := io.ReadAll(io.LimitReader(tr, max+1))
	if err != nil {
		return nil, refuse("reading it failed: " + err.Error())
	}
	if int64(len(data)) > max {
		return nil, refuse(fmt.Sprintf("larger than %d bytes", max))
	}
	return data, nil
}
