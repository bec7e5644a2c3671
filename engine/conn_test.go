package engine

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/podbot/podbot/errdefs"
)

func TestConnectPingAndInfo(t *testing.T) {
	for _, podman := range []bool{false, true} {
		f := newFakeEngine(t)
		f.podman, f.rootless = podman, podman
		c := f.connect()
		if err := c.Ping(context.Background(), 0); err != nil {
			t.Fatalf("Ping: %v", err)
		}
		info, err := c.Info(context.Background())
		if err != nil {
			t.Fatalf("Info: %v", err)
		}
		wantKind, wantVersion := KindDocker, "20.10.24"
		if podman {
			wantKind, wantVersion = KindPodman, "4.3.1"
		}
		if info.Kind != wantKind || info.Version != wantVersion || info.APIVersion != "1.41" || info.ServerAPIVersion != "1.41" {
			t.Errorf("podman=%v: got %+v", podman, info)
		}
		if info.OCIRuntime != "runc" || info.CgroupVersion != "1" || info.CgroupDriver != "cgroupfs" || info.OS != "linux" || info.Arch != "amd64" {
			t.Errorf("podman=%v: runtime facts wrong: %+v", podman, info)
		}
		if info.Rootless != podman {
			t.Errorf("Rootless = %v, want %v", info.Rootless, podman)
		}
		if info.Name != "host [31m" {
			t.Errorf("control characters not stripped from engine text: %q", info.Name)
		}
		if got := c.Endpoint(); got.Address != f.socket || c.API() == nil {
			t.Errorf("Endpoint() = %+v", got)
		}
	}
}

func TestConnectEagerSocketChecks(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "file")
	if err := os.WriteFile(regular, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		path   string
		reason error
		hint   string
	}{
		{"missing", filepath.Join(dir, "missing.sock"), errdefs.ErrSocketNotFound, "podman system service"},
		{"regular file", regular, errdefs.ErrSocketNotFound, "not a socket"},
		{"directory", dir, errdefs.ErrSocketNotFound, "not a socket"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ep, err := ParseEndpoint(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Connect(context.Background(), ep)
			if !errors.Is(err, errdefs.ErrContainer) || !errors.Is(err, tc.reason) {
				t.Fatalf("got %v, want reason %v", err, tc.reason)
			}
			if !contains(err.Error(), tc.path) || !contains(err.Error(), tc.hint) {
				t.Errorf("error %q does not name %q with hint %q", err, tc.path, tc.hint)
			}
		})
	}
}

// The test process runs as root, which bypasses file permissions, so the
// permission cases drive the eager check with the errors the kernel gives
// an unprivileged user.
func TestCheckUnixSocketPermission(t *testing.T) {
	f := newFakeEngine(t)
	ep := f.endpoint()
	cases := []struct {
		name   string
		stat   func(string) (fs.FileInfo, error)
		access func(string) error
	}{
		{"directory not searchable", func(p string) (fs.FileInfo, error) {
			return nil, &fs.PathError{Op: "stat", Path: p, Err: syscall.EACCES}
		}, func(string) error { return nil }},
		{"socket not writable", os.Stat, func(p string) error {
			return &fs.PathError{Op: "access", Path: p, Err: syscall.EACCES}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkUnixSocket(ep, tc.stat, tc.access)
			if !errors.Is(err, errdefs.ErrPermissionDenied) || !errors.Is(err, syscall.EACCES) {
				t.Fatalf("got %v, want permission denied", err)
			}
			if !contains(err.Error(), f.socket) || !contains(err.Error(), "rootless Podman") {
				t.Errorf("error %q does not name the socket and a fix", err)
			}
		})
	}
	if err := checkUnixSocket(ep, os.Stat, accessRW); err != nil {
		t.Fatalf("real socket refused: %v", err)
	}
}

func TestPingFailures(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		path := socketWithoutListener(t)
		c, err := Connect(context.Background(), Endpoint{Scheme: SchemeUnix, Address: path})
		if err != nil {
			t.Fatalf("Connect to a present socket file: %v", err)
		}
		defer c.Close()
		err = c.Ping(context.Background(), 5*time.Second)
		if !errors.Is(err, errdefs.ErrConnectionFailed) {
			t.Fatalf("got %v, want connection failed", err)
		}
		if !contains(err.Error(), path) {
			t.Errorf("error %q does not name the endpoint", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		f := newFakeEngine(t)
		release := make(chan struct{})
		defer close(release)
		f.handle("GET /_ping", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
		c := f.connect()
		err := c.Ping(context.Background(), 50*time.Millisecond)
		if !errors.Is(err, errdefs.ErrTimeout) || errors.Is(err, errdefs.ErrConnectionFailed) {
			t.Fatalf("got %v, want a timeout", err)
		}
		if !contains(err.Error(), f.socket) || !contains(err.Error(), "50ms") {
			t.Errorf("error %q does not name the endpoint and the timeout", err)
		}
	})
	t.Run("caller cancelled is not a timeout", func(t *testing.T) {
		f := newFakeEngine(t)
		c := f.connect()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := c.Ping(ctx, time.Minute)
		if !errors.Is(err, context.Canceled) || errors.Is(err, errdefs.ErrTimeout) {
			t.Fatalf("got %v, want cancellation", err)
		}
	})
	t.Run("tcp is lazy, fails on ping", func(t *testing.T) {
		ep, err := ParseEndpoint("tcp://127.0.0.1:1")
		if err != nil {
			t.Fatal(err)
		}
		c, err := Connect(context.Background(), ep)
		if err != nil {
			t.Fatalf("Connect should be lazy for tcp: %v", err)
		}
		defer c.Close()
		err = c.Ping(context.Background(), 5*time.Second)
		if !errors.Is(err, errdefs.ErrConnectionFailed) || errors.Is(err, errdefs.ErrSocketNotFound) {
			t.Fatalf("got %v, want connection failed", err)
		}
		if !contains(err.Error(), "http://127.0.0.1:1") {
			t.Errorf("error %q does not name the endpoint", err)
		}
	})
}

func TestHTTPErrorsAreClassified(t *testing.T) {
	cases := []struct {
		status int
		msg    string
		reason error
	}{
		{http.StatusNotFound, "No such container: x", errdefs.ErrNotFound},
		{http.StatusConflict, `Conflict. The container name "/x" is already in use`, errdefs.ErrAlreadyExists},
		{http.StatusConflict, "You cannot remove a running container", errdefs.ErrConflict},
		{http.StatusInternalServerError, `container create: creating container storage: the container name "x" is already in use by 3a92. You have to remove that container to be able to reuse that name: that name is already in use`, errdefs.ErrAlreadyExists},
		{http.StatusForbidden, "forbidden", errdefs.ErrPermissionDenied},
		{http.StatusUnauthorized, "no", errdefs.ErrPermissionDenied},
		{http.StatusBadRequest, "bad parameter", errdefs.ErrInvalidValue},
		{http.StatusNotImplemented, "nope", errdefs.ErrUnsupported},
		{http.StatusInternalServerError, "boom", errdefs.ErrUnavailable},
		{http.StatusServiceUnavailable, "later", errdefs.ErrUnavailable},
	}
	for _, tc := range cases {
		t.Run(http.StatusText(tc.status)+" "+tc.msg, func(t *testing.T) {
			f := newFakeEngine(t)
			f.handle("GET /info", func(w http.ResponseWriter, _ *http.Request) { apiError(w, tc.status, tc.msg) })
			f.handle("GET /version", func(w http.ResponseWriter, _ *http.Request) { apiError(w, tc.status, tc.msg) })
			c := f.connect()
			_, err := c.Info(context.Background())
			if !errors.Is(err, errdefs.ErrContainer) || !errors.Is(err, tc.reason) {
				t.Fatalf("got %v, want reason %v", err, tc.reason)
			}
			if !contains(err.Error(), f.socket) || !contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not name the endpoint and the engine's message", err)
			}
		})
	}
}

func TestPingServerError(t *testing.T) {
	f := newFakeEngine(t)
	f.handle("GET /_ping", func(w http.ResponseWriter, _ *http.Request) {
		apiError(w, http.StatusInternalServerError, "engine broken")
	})
	err := f.connect().Ping(context.Background(), 0)
	if !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("got %v, want unavailable", err)
	}
}

func TestConnectOptions(t *testing.T) {
	f := newFakeEngine(t)
	if _, err := Connect(context.Background(), f.endpoint(), WithPingTimeout(0)); !errors.Is(err, errdefs.ErrInvalidValue) {
		t.Errorf("WithPingTimeout(0): got %v", err)
	}
	if _, err := Connect(context.Background(), f.endpoint(), WithPullRetry(0, time.Second)); !errors.Is(err, errdefs.ErrInvalidValue) {
		t.Errorf("WithPullRetry(0): got %v", err)
	}
	if _, err := Connect(context.Background(), f.endpoint(), WithUserAgent("a\r\nX-Evil: 1")); !errors.Is(err, errdefs.ErrInvalidValue) {
		t.Errorf("WithUserAgent with CRLF: got %v", err)
	}
	var gotUA string
	f.handle("GET /_ping", func(w http.ResponseWriter, r *http.Request) {
		gotUA = r.Header.Get("User-Agent")
		w.Header().Set("Api-Version", "1.41")
	})
	c := f.connect(WithUserAgent("podbot/test"))
	if err := c.Ping(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if gotUA != "podbot/test" {
		t.Errorf("User-Agent = %q", gotUA)
	}
}

func TestTLSFromEnviron(t *testing.T) {
	var o options
	if err := WithTLSFromEnviron([]string{"DOCKER_TLS_VERIFY=1"})(&o); err != nil || o.tls != nil {
		t.Fatalf("no cert path must leave TLS alone: %+v %v", o.tls, err)
	}
	if err := WithTLSFromEnviron([]string{"DOCKER_CERT_PATH=/certs", "DOCKER_TLS_VERIFY=1"})(&o); err != nil || o.tls == nil || o.tls.CertDir != "/certs" || !o.tls.Verify {
		t.Fatalf("got %+v %v", o.tls, err)
	}
	if err := WithTLSFromEnviron([]string{"DOCKER_CERT_PATH=/certs"})(&o); err != nil || o.tls.Verify {
		t.Fatalf("DOCKER_TLS_VERIFY unset must not verify (Docker semantics): %+v", o.tls)
	}
	// A cert dir without the files is an error naming the fix; tcp with TLS
	// becomes https.
	ep, _ := ParseEndpoint("tcp://127.0.0.1:2376")
	_, err := Connect(context.Background(), ep, WithTLS(TLSConfig{CertDir: t.TempDir(), Verify: true}))
	if err != nil {
		t.Fatalf("empty cert dir (no client cert, system roots) should connect lazily: %v", err)
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "ca.pem"), []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Connect(context.Background(), ep, WithTLS(TLSConfig{CertDir: bad}))
	if !errors.Is(err, errdefs.ErrInvalidValue) || !contains(err.Error(), "DOCKER_CERT_PATH") {
		t.Fatalf("got %v", err)
	}
}

// TestPingNegotiatesVersion: a Ping that answered also settles the API
// version, so the first call after it costs one round trip, not two.
func TestPingNegotiatesVersion(t *testing.T) {
	f := newFakeEngine(t)
	c := f.connect()
	if err := c.Ping(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.List(context.Background(), map[string]string{"podbot.managed": "true"}, true, false); err != nil {
		t.Fatal(err)
	}
	if n := f.callCount("GET /_ping"); n != 1 {
		t.Errorf("Ping then List sent %d pings, want 1", n)
	}
	if got := c.API().ClientVersion(); got != "1.41" {
		t.Errorf("negotiated API version %q, want the engine's 1.41", got)
	}
}
