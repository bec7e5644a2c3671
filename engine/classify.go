package engine

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"strings"
	"syscall"
	"unicode/utf8"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"

	"github.com/podbot/podbot/errdefs"
)

// maxErrorText bounds the engine-supplied text carried in an error message.
const maxErrorText = 2048

// Classify turns an error from the Engine API client (or from dialing the
// endpoint) into an *errdefs.ContainerError whose reason says what went
// wrong: ErrSocketNotFound, ErrPermissionDenied, ErrConnectionFailed,
// ErrTimeout, ErrNotFound, ErrAlreadyExists, ErrConflict, ErrInvalidValue,
// ErrUnsupported or ErrUnavailable (5xx). The engine's text is bounded and
// stripped of control characters. op names the operation, endpoint the
// engine, target the container, exec or image involved (may be empty).
// Classify returns nil for nil and leaves an existing ContainerError alone.
func Classify(op, endpoint, target string, err error) error {
	if err == nil {
		return nil
	}
	var ce *errdefs.ContainerError
	if errors.As(err, &ce) {
		return err
	}
	out := &errdefs.ContainerError{Op: op, Endpoint: endpoint, Container: target, Err: boundedError{err}}
	text := strings.ToLower(err.Error())
	switch {
	case errors.Is(err, context.Canceled):
		out.Msg = "cancelled"
	case errors.Is(err, context.DeadlineExceeded) || isNetTimeout(err):
		out.Reason = errdefs.ErrTimeout
		out.Msg = "the engine did not answer in time"
		out.Hint = "check that the engine is running and not overloaded"
	case strings.Contains(text, "unable to apply caps"):
		out.Reason = errdefs.ErrUnsupported
		out.Msg = "the engine's runtime could not grant the container's capabilities: dockerd on this host cannot run privileged containers " +
			"(the host's capability bounding set lacks CAP_SYS_RESOURCE)"
		out.Hint = "use Podman for the privileged profile (its privileged mode works here) or set sandbox.privileged = false"
	case isCDIFailure(text):
		out.Reason = errdefs.ErrUnsupported
		out.Msg = "the engine could not inject the requested GPU (CDI) devices"
		out.Hint = "generate the CDI spec with `nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`, check it with `nvidia-ctk cdi list`, and name a listed device in sandbox.gpus"
	case errors.Is(err, syscall.ECONNREFUSED):
		out.Reason = errdefs.ErrConnectionFailed
		out.Msg = "connection refused: nothing is listening"
		out.Hint = "start the engine (e.g. `podman system service --time=0 " + endpoint + " &` or dockerd)"
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOENT):
		out.Reason = errdefs.ErrSocketNotFound
		out.Hint = "start the engine or point podbot at its socket with --engine-socket"
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM):
		out.Reason = errdefs.ErrPermissionDenied
		out.Hint = "run podbot as a user that may use the socket (e.g. a member of the socket's group) or use rootless Podman"
	case client.IsErrConnectionFailed(err):
		out.Reason = errdefs.ErrConnectionFailed
		out.Msg = "cannot connect to the engine"
		out.Hint = "check that the engine is running and listening on this endpoint"
	case strings.Contains(text, "already in use") || strings.Contains(text, "already exists"):
		// Podman answers a name conflict with a 500, dockerd with a 409.
		out.Reason = errdefs.ErrAlreadyExists
		out.Hint = "pick another name or remove the existing container"
	case cerrdefs.IsNotFound(err):
		out.Reason = errdefs.ErrNotFound
	case cerrdefs.IsConflict(err):
		out.Reason = errdefs.ErrConflict
	case cerrdefs.IsPermissionDenied(err) || cerrdefs.IsUnauthorized(err):
		out.Reason = errdefs.ErrPermissionDenied
	case cerrdefs.IsInvalidArgument(err):
		out.Reason = errdefs.ErrInvalidValue
	case cerrdefs.IsNotImplemented(err):
		out.Reason = errdefs.ErrUnsupported
	case cerrdefs.IsInternal(err) || cerrdefs.IsUnavailable(err) || cerrdefs.IsUnknown(err):
		out.Reason = errdefs.ErrUnavailable
		out.Msg = "the engine failed"
	default:
		var ne *net.OpError
		if errors.As(err, &ne) {
			out.Reason = errdefs.ErrConnectionFailed
		}
	}
	return out
}

func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isCDIFailure(lowerText string) bool {
	return containsWord(lowerText, "cdi") ||
		strings.Contains(lowerText, "nvidia") ||
		strings.Contains(lowerText, "could not select device driver")
}

// containsWord reports whether word occurs in s with no letter or digit
// directly before or after it.
func containsWord(s, word string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], word)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(word)
		if (start == 0 || !isAlnum(s[start-1])) && (end == len(s) || !isAlnum(s[end])) {
			return true
		}
		i = start + 1
	}
}

func isAlnum(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// boundedError keeps the cause for errors.Is/As but bounds and sanitises the
// text the engine supplied.
type boundedError struct{ err error }

func (b boundedError) Error() string { return truncate(b.err.Error(), maxErrorText) }
func (b boundedError) Unwrap() error { return b.err }

// truncate cuts s to at most n bytes on a rune boundary and replaces control
// characters (terminal escapes included) with spaces.
func truncate(s string, n int) string {
	cut := len(s) > n
	if cut {
		s = s[:n]
		for i := 0; i < utf8.UTFMax-1 && len(s) > 0; i++ {
			if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size > 1 {
				break
			}
			s = s[:len(s)-1]
		}
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
	if cut {
		s += "…"
	}
	return s
}
