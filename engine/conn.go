package engine

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/docker/docker/client"

	"github.com/podbot/podbot/errdefs"
)

// Conn is a connection to one container engine. It is safe for concurrent
// use. Close releases it.
type Conn struct {
	api  *client.Client
	ep   Endpoint
	opts options
	// podman is set by a Ping answered with Podman's Libpod-Api-Version
	// header.
	podman atomic.Bool
}

// Connect prepares a client for the endpoint with API version negotiation.
// A unix socket is checked at once (it must exist, be a socket, and be
// readable and writable by this process); tcp, http and https endpoints are
// lazy and any problem surfaces on the first call, normally Ping.
func Connect(ctx context.Context, ep Endpoint, opts ...Option) (*Conn, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if ep.Scheme == "" {
		parsed, err := ParseEndpoint(ep.Raw)
		if err != nil {
			return nil, err
		}
		ep = parsed
	}
	if ep.Scheme == SchemeUnix {
		if err := checkUnixSocket(ep, os.Stat, accessRW); err != nil {
			return nil, err
		}
	}
	clientOpts, err := clientOptions(ep, o)
	if err != nil {
		return nil, err
	}
	api, err := client.NewClientWithOpts(clientOpts...)
	if err != nil {
		return nil, &errdefs.ContainerError{Op: "connect", Endpoint: ep.String(), Reason: errdefs.ErrInvalidValue,
			Msg: "cannot set up the engine client", Err: boundedError{err}}
	}
	return &Conn{api: api, ep: ep, opts: o}, nil
}

func clientOptions(ep Endpoint, o options) ([]client.Opt, error) {
	opts := []client.Opt{client.WithAPIVersionNegotiation()}
	if o.userAgent != "" {
		opts = append(opts, client.WithUserAgent(o.userAgent))
	}
	switch ep.Scheme {
	case SchemeUnix, SchemeNpipe:
		return append(opts, client.WithHost(ep.String())), nil
	case SchemeHTTP, SchemeHTTPS:
		if !useTLS(ep, o) {
			return append(opts, client.WithHost("tcp://"+ep.Address), client.WithScheme("http")), nil
		}
		cfg := TLSConfig{Verify: true}
		if o.tls != nil {
			cfg = *o.tls
		}
		tc, err := loadTLS(cfg)
		if err != nil {
			return nil, &errdefs.ContainerError{Op: "connect", Endpoint: ep.String(), Reason: errdefs.ErrInvalidValue,
				Msg: "cannot load the TLS client configuration", Hint: "check DOCKER_CERT_PATH holds ca.pem, cert.pem and key.pem", Err: err}
		}
		tr := &http.Transport{TLSClientConfig: tc, MaxIdleConns: 6, IdleConnTimeout: 30 * time.Second}
		hc := &http.Client{Transport: tr, CheckRedirect: client.CheckRedirect}
		return append(opts, client.WithHTTPClient(hc), client.WithHost("tcp://"+ep.Address), client.WithScheme("https")), nil
	default:
		return nil, &errdefs.ConfigError{Key: endpointKey, Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("unsupported endpoint scheme %q", ep.Scheme)}
	}
}

// useTLS reports whether the endpoint is spoken over TLS: https, or tcp
// with TLS settings (as the Docker CLI does).
func useTLS(ep Endpoint, o options) bool {
	return ep.Scheme == SchemeHTTPS || (ep.Scheme == SchemeHTTP && o.tls != nil && rawSchemeIs(ep.Raw, "tcp"))
}

func rawSchemeIs(raw, scheme string) bool {
	s, _, ok := splitScheme(strings.TrimSpace(raw))
	return ok && s == scheme
}

// loadTLS builds a client TLS configuration from a Docker-style cert dir.
func loadTLS(cfg TLSConfig) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CertDir == "" {
		return tc, nil
	}
	ca, err := os.ReadFile(filepath.Join(cfg.CertDir, "ca.pem"))
	switch {
	case err == nil:
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("%s holds no PEM certificate", filepath.Join(cfg.CertDir, "ca.pem"))
		}
		tc.RootCAs = pool
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	certFile, keyFile := filepath.Join(cfg.CertDir, "cert.pem"), filepath.Join(cfg.CertDir, "key.pem")
	if _, statErr := os.Stat(certFile); statErr == nil {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	// DOCKER_TLS_VERIFY semantics: without Verify the server is not authenticated.
	tc.InsecureSkipVerify = !cfg.Verify
	return tc, nil
}

// checkUnixSocket is the eager check of a unix socket endpoint.
func checkUnixSocket(ep Endpoint, stat func(string) (fs.FileInfo, error), access func(string) error) error {
	path := ep.Address
	fail := func(reason error, msg, hint string, err error) error {
		return &errdefs.ContainerError{Op: "connect", Endpoint: ep.String(), Reason: reason, Msg: msg, Hint: hint, Err: err}
	}
	fi, err := stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail(errdefs.ErrSocketNotFound, fmt.Sprintf("no socket at %s", path),
			"start the engine (e.g. `podman system service --time=0 unix://"+path+" &`) or point --engine-socket / PODBOT_ENGINE_SOCKET at the right socket", nil)
	case errors.Is(err, fs.ErrPermission):
		return fail(errdefs.ErrPermissionDenied, fmt.Sprintf("cannot look up %s", path),
			"give this user access to the socket's directory, or use a socket this user owns (rootless Podman: $XDG_RUNTIME_DIR/podman/podman.sock)", err)
	case err != nil:
		return fail(errdefs.ErrConnectionFailed, fmt.Sprintf("cannot stat %s", path), "", err)
	case fi.Mode()&fs.ModeSocket == 0:
		return fail(errdefs.ErrSocketNotFound, fmt.Sprintf("%s exists but is not a socket", path),
			"point --engine-socket at the engine's socket, not at a regular file or directory", nil)
	}
	if err := access(path); err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
			return fail(errdefs.ErrPermissionDenied, fmt.Sprintf("this user may not use %s", path),
				"add the user to the socket's group (e.g. `docker`), run as the socket's owner, or use rootless Podman", err)
		}
		return fail(errdefs.ErrConnectionFailed, fmt.Sprintf("cannot check access to %s", path), "", err)
	}
	return nil
}

// Ping checks the engine answers within timeout (DefaultPingTimeout, or
// the WithPingTimeout value, when timeout is not positive). A timeout is
// reported with the reason errdefs.ErrTimeout, an unreachable engine with
// errdefs.ErrConnectionFailed; every error names the endpoint. A Ping that
// answered also settles the API version from its answer, so the next call
// does not ping again to negotiate it, and tells whether the engine is
// Podman (IsPodman).
func (c *Conn) Ping(ctx context.Context, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = c.opts.pingTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ping, podman, err := c.rawPing(pctx)
	if err == nil {
		c.api.NegotiateAPIVersionPing(ping)
		c.podman.Store(podman)
		return nil
	}
	if ctx.Err() == nil && errors.Is(pctx.Err(), context.DeadlineExceeded) {
		return &errdefs.ContainerError{Op: "ping", Endpoint: c.ep.String(), Reason: errdefs.ErrTimeout,
			Msg:  fmt.Sprintf("the engine did not answer within %s", timeout),
			Hint: "check that the engine is running and not overloaded, or that the address is right", Err: err}
	}
	return c.classify("ping", "", err)
}

// IsPodman reports whether the last Ping that answered found Podman (its
// answer carries the Libpod-Api-Version header).
func (c *Conn) IsPodman() bool { return c.podman.Load() }

// API returns the underlying Engine API client for calls this package does
// not wrap (for example image builds).
func (c *Conn) API() *client.Client { return c.api }

// Endpoint returns the endpoint this connection uses.
func (c *Conn) Endpoint() Endpoint { return c.ep }

// Close releases the connection's idle resources.
func (c *Conn) Close() error { return c.api.Close() }

func (c *Conn) classify(op, target string, err error) error {
	return Classify(op, c.ep.String(), target, err)
}

func (c *Conn) logger() *slog.Logger { return c.opts.logger }
