//go:build !unix

package sidecarsock

import (
	"net"

	"github.com/podbot/podbot/errdefs"
)

func unsupported(path string) error {
	return &errdefs.FilesystemError{Op: "sidecar link directory", Path: path, Reason: errdefs.ErrUnsupported,
		Msg: "the sidecar socket is used on Linux hosts only"}
}

// Prepare is unix-only; elsewhere it fails with errdefs.ErrUnsupported.
func Prepare(parent string, _, _ int) (string, []byte, error) { return "", nil, unsupported(parent) }

// LoadKey is unix-only; elsewhere it fails with errdefs.ErrUnsupported.
func LoadKey(parent string) ([]byte, error) { return nil, unsupported(parent) }

// TakeKey is unix-only; elsewhere it fails with errdefs.ErrUnsupported.
func TakeKey(dir string) ([]byte, error) { return nil, unsupported(dir) }

// Listen is unix-only; elsewhere it fails with errdefs.ErrUnsupported.
func Listen(dir string) (*net.UnixListener, error) { return nil, unsupported(dir) }
