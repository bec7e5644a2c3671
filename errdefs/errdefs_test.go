package errdefs

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

func TestClassesAndReasons(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		class   error
		reason  error
		notThis error
	}{
		{"config", &ConfigError{Key: "sandbox.privileged", Reason: ErrInvalidValue}, ErrConfig, ErrInvalidValue, ErrContainer},
		{"container", &ContainerError{Op: "connect", Reason: ErrSocketNotFound}, ErrContainer, ErrSocketNotFound, ErrConfig},
		{"github", &GitHubError{Op: "load key", Reason: ErrInvalidKey}, ErrGitHub, ErrInvalidKey, ErrFilesystem},
		{"filesystem", &FilesystemError{Op: "read", Path: "/x", Reason: ErrPermissionDenied}, ErrFilesystem, ErrPermissionDenied, ErrGitHub},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wrapped := fmt.Errorf("outer: %w", tc.err)
			if !errors.Is(wrapped, tc.class) {
				t.Errorf("errors.Is(%v, class) = false", wrapped)
			}
			if !errors.Is(wrapped, tc.reason) {
				t.Errorf("errors.Is(%v, reason) = false", wrapped)
			}
			if errors.Is(wrapped, tc.notThis) {
				t.Errorf("errors.Is(%v, %v) = true, want false", wrapped, tc.notThis)
			}
		})
	}
}

func TestUnwrapKeepsCause(t *testing.T) {
	err := &FilesystemError{Op: "read", Path: "/nope", Err: fs.ErrNotExist}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("cause lost")
	}
	var fe *FilesystemError
	if !errors.As(fmt.Errorf("x: %w", err), &fe) || fe.Path != "/nope" {
		t.Fatal("errors.As failed")
	}
}

func TestMessages(t *testing.T) {
	got := (&ConfigError{Key: "github.app_id", Source: "PODBOT_GITHUB_APP_ID", Reason: ErrInvalidValue, Msg: `expected a positive integer, got "abc"`}).Error()
	want := `config github.app_id (from PODBOT_GITHUB_APP_ID): expected a positive integer, got "abc"`
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	got = (&ContainerError{Op: "connect", Endpoint: "unix:///x.sock", Reason: ErrSocketNotFound, Hint: "start the engine"}).Error()
	want = "connect (engine unix:///x.sock): socket not found; start the engine"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestClampExitCode(t *testing.T) {
	for in, want := range map[int64]int{0: 0, 1: 1, 42: 42, 255: 255, 256: 255, 1000: 255, -1: 1, -255: 1} {
		if got := ClampExitCode(in); got != want {
			t.Errorf("ClampExitCode(%d) = %d, want %d", in, got, want)
		}
	}
}
