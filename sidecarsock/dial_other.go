//go:build !linux

package sidecarsock

import (
	"context"
	"net"

	"github.com/podbot/podbot/errdefs"
)

// Dial is Linux-only: elsewhere podbot reaches the sidecar over an exec
// stream. It always fails with an error matching errdefs.ErrUnsupported.
func Dial(_ context.Context, dir string, _ int, _ []byte) (net.Conn, error) {
	return nil, &errdefs.FilesystemError{Op: "dial sidecar socket", Path: dir, Reason: errdefs.ErrUnsupported,
		Msg: "the sidecar socket is used on Linux hosts only"}
}
