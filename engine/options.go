package engine

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/podbot/podbot/errdefs"
)

// DefaultPingTimeout is how long Ping waits when given no timeout.
const DefaultPingTimeout = 10 * time.Second

// Option configures Connect. An option that cannot be applied returns an
// error and Connect fails with it.
type Option func(*options) error

type options struct {
	tls          *TLSConfig
	pingTimeout  time.Duration
	userAgent    string
	logger       *slog.Logger
	pullProgress func(PullEvent)
	pullAttempts int
	pullBackoff  time.Duration
}

func defaultOptions() options {
	return options{
		pingTimeout:  DefaultPingTimeout,
		logger:       slog.New(slog.DiscardHandler),
		pullAttempts: 4,
		pullBackoff:  time.Second,
	}
}

// TLSConfig holds the client TLS settings for https (and tcp) endpoints, in
// the layout the Docker CLI uses: CertDir holds ca.pem, cert.pem and key.pem.
type TLSConfig struct {
	// CertDir is the directory with ca.pem, cert.pem and key.pem. Empty
	// means: verify the server against the system roots, no client cert.
	CertDir string
	// Verify checks the server certificate. As with DOCKER_TLS_VERIFY, a
	// CertDir without Verify encrypts but does not authenticate the server.
	Verify bool
}

// WithTLS sets the TLS client configuration. It applies to https:// endpoints
// and upgrades a tcp:// endpoint to https, as the Docker CLI does; it is
// ignored for unix sockets, named pipes and explicit http:// endpoints.
func WithTLS(cfg TLSConfig) Option {
	return func(o *options) error {
		c := cfg
		o.tls = &c
		return nil
	}
}

// WithTLSFromEnviron reads DOCKER_CERT_PATH and DOCKER_TLS_VERIFY from the
// given KEY=VALUE list (normally os.Environ(), passed in by the caller) and
// applies them as WithTLS would. With DOCKER_CERT_PATH empty it does nothing.
func WithTLSFromEnviron(environ []string) Option {
	return func(o *options) error {
		dir := lookupEnv(environ, "DOCKER_CERT_PATH")
		if dir == "" {
			return nil
		}
		o.tls = &TLSConfig{CertDir: dir, Verify: lookupEnv(environ, "DOCKER_TLS_VERIFY") != ""}
		return nil
	}
}

// WithPingTimeout sets the timeout Ping uses when called with none.
func WithPingTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return &errdefs.ConfigError{Key: "engine ping timeout", Reason: errdefs.ErrInvalidValue,
				Msg: fmt.Sprintf("expected a positive duration, got %s", d)}
		}
		o.pingTimeout = d
		return nil
	}
}

// WithUserAgent sets the User-Agent header sent to the engine.
func WithUserAgent(ua string) Option {
	return func(o *options) error {
		if strings.ContainsAny(ua, "\r\n") {
			return &errdefs.ConfigError{Key: "engine user agent", Reason: errdefs.ErrInvalidValue, Msg: "must not contain line breaks"}
		}
		o.userAgent = ua
		return nil
	}
}

// WithLogger sets the logger for non-fatal events (create warnings, pull
// retries, failed terminal resizes without a callback). The default
// discards them.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l != nil {
			o.logger = l
		}
		return nil
	}
}

// WithPullProgress sets the callback Create uses to report image pull
// progress.
func WithPullProgress(fn func(PullEvent)) Option {
	return func(o *options) error {
		o.pullProgress = fn
		return nil
	}
}

// WithPullRetry sets how many times a pull is attempted (at least 1) and
// the first delay between attempts; each later delay doubles.
func WithPullRetry(attempts int, firstDelay time.Duration) Option {
	return func(o *options) error {
		if attempts < 1 || firstDelay < 0 {
			return &errdefs.ConfigError{Key: "engine pull retry", Reason: errdefs.ErrInvalidValue,
				Msg: fmt.Sprintf("expected at least 1 attempt and a non-negative delay, got %d and %s", attempts, firstDelay)}
		}
		o.pullAttempts, o.pullBackoff = attempts, firstDelay
		return nil
	}
}
