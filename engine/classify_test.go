package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func dialErr(errno error) error {
	return &url.Error{Op: "Get", URL: "http://api.moby.localhost/_ping",
		Err: &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", errno)}}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		reason error
		hint   string
	}{
		{"refused", dialErr(syscall.ECONNREFUSED), errdefs.ErrConnectionFailed, "start the engine"},
		{"no socket", dialErr(syscall.ENOENT), errdefs.ErrSocketNotFound, "--engine-socket"},
		{"permission", dialErr(syscall.EACCES), errdefs.ErrPermissionDenied, "group"},
		{"eperm", &fs.PathError{Op: "open", Path: "/x", Err: syscall.EPERM}, errdefs.ErrPermissionDenied, "group"},
		{"deadline", fmt.Errorf("ping: %w", context.DeadlineExceeded), errdefs.ErrTimeout, "not overloaded"},
		{"net timeout", &net.OpError{Op: "read", Err: timeoutErr{}}, errdefs.ErrTimeout, ""},
		{"other dial error", &net.OpError{Op: "dial", Err: errors.New("no route")}, errdefs.ErrConnectionFailed, ""},
		{"privileged on dockerd", errors.New(`Error response from daemon: failed to create task: OCI runtime create failed: runc create failed: unable to apply caps: operation not permitted: unknown`),
			errdefs.ErrUnsupported, "use Podman"},
		{"cdi", errors.New(`Error response from daemon: failed to inject CDI devices: unresolvable CDI devices nvidia.com/gpu=all`), errdefs.ErrUnsupported, "nvidia-ctk cdi generate"},
		{"nvidia driver", errors.New(`could not select device driver "" with capabilities: [[gpu]]`), errdefs.ErrUnsupported, "nvidia-ctk cdi generate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Classify("op", "unix:///e.sock", "box", tc.err)
			var ce *errdefs.ContainerError
			if !errors.As(err, &ce) {
				t.Fatalf("got %T", err)
			}
			if !errors.Is(err, tc.reason) {
				t.Errorf("got %v, want reason %v", err, tc.reason)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("cause lost: %v", err)
			}
			if !strings.Contains(err.Error(), "unix:///e.sock") || !strings.Contains(err.Error(), "box") || !strings.Contains(err.Error(), tc.hint) {
				t.Errorf("message %q lacks endpoint, target or hint %q", err, tc.hint)
			}
		})
	}
}

func TestClassifyEdges(t *testing.T) {
	if Classify("op", "e", "", nil) != nil {
		t.Error("nil must stay nil")
	}
	orig := &errdefs.ContainerError{Op: "inner", Reason: errdefs.ErrNotFound}
	if got := Classify("outer", "e", "", fmt.Errorf("w: %w", orig)); !errors.Is(got, errdefs.ErrNotFound) {
		t.Errorf("existing ContainerError reclassified: %v", got)
	}
	err := Classify("op", "e", "", context.Canceled)
	if !errors.Is(err, context.Canceled) || errors.Is(err, errdefs.ErrTimeout) {
		t.Errorf("cancel: %v", err)
	}
	if containsWord("specdir", "cdi") || !containsWord("bad cdi spec", "cdi") || !containsWord("cdi", "cdi") {
		t.Error("containsWord")
	}
}

func TestClassifyBoundsEngineText(t *testing.T) {
	long := strings.Repeat("é", 5000) + "\x1b]0;pwned\x07"
	err := Classify("op", "e", "", errors.New(long))
	msg := err.Error()
	if len(msg) > maxErrorText+200 {
		t.Errorf("message is %d bytes", len(msg))
	}
	if strings.ContainsAny(msg, "\x1b\x07") {
		t.Error("control characters passed through")
	}
	if !strings.HasSuffix(msg, "…") {
		t.Errorf("truncation not marked: %q", msg[len(msg)-10:])
	}
	if got := truncate("ab\x00c", 10); got != "ab c" {
		t.Errorf("truncate = %q", got)
	}
	if got := truncate("héllo", 2); got != "h…" {
		t.Errorf("truncate on a rune boundary = %q", got)
	}
}
