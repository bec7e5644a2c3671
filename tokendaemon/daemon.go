package tokendaemon

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/gitcred"
	"github.com/podbot/podbot/github"
)

// Defaults for Options fields left zero.
const (
	DefaultRefreshBuffer = 5 * time.Minute
	DefaultCheckInterval = 30 * time.Second
	DefaultMinBackoff    = time.Second
	DefaultMaxBackoff    = 2 * time.Minute
)

// TokenSource mints installation tokens limited to repositories (names in
// the installation's account); *github.App is one.
type TokenSource interface {
	InstallationToken(ctx context.Context, repositories []string) (github.Token, error)
}

// Options configure a Daemon. Zero durations take the defaults above.
type Options struct {
	// ContainerID names the container (id or name); it becomes the
	// directory name.
	ContainerID string
	// DirName, when set, names the token directory instead of
	// ContainerID: a claimed pool member's directory keeps the member's
	// name (the claim renames the container).
	DirName string
	// RuntimeDir is $XDG_RUNTIME_DIR; the caller reads the environment.
	RuntimeDir string
	// Source mints tokens.
	Source TokenSource
	// Repositories are the repository names (without owner) every token is
	// limited to; at least one is required.
	Repositories []string
	// GitOrigin is the one origin git in the container may send the token
	// to; it is written to OriginFileName next to the token, where the
	// sandbox's askpass program reads it. The zero Origin writes nothing,
	// and git in the container then gets no token at all.
	GitOrigin gitcred.Origin
	// Alive reports whether the container is running (not merely exists):
	// a stopped container must not keep a token on disk, so Run removes
	// the directory and returns as soon as Alive says false. An error is
	// logged and the container is assumed alive.
	Alive func(ctx context.Context) (bool, error)
	// RefreshBuffer is how long before expiry a token is replaced. For a
	// token that lives less than twice the buffer, half its lifetime is
	// used instead.
	RefreshBuffer time.Duration
	// CheckInterval is how often Alive is asked while Watch is not
	// following the container (no Watch, or its stream is down).
	CheckInterval time.Duration
	// Watch, when set, follows the engine's event stream for the
	// container: it calls changed once the stream is open and after each
	// event that may start, stop or remove the container, and returns when
	// the stream ends. While it runs, Run asks Alive on each call of
	// changed (and before each refresh) instead of every CheckInterval, so
	// a removed container's directory goes at once. When Watch fails or
	// its stream breaks, Run polls every CheckInterval and calls Watch
	// again after a backoff between MinBackoff and MaxBackoff.
	Watch func(ctx context.Context, changed func()) error
	// MinBackoff and MaxBackoff bound the wait between failed refreshes.
	MinBackoff, MaxBackoff time.Duration
	// Clock defaults to SystemClock.
	Clock Clock
	// Jitter returns a number in [0, 1); it defaults to math/rand/v2.
	Jitter func() float64
	// Logger receives progress and failures (never token values); nil
	// discards them.
	Logger *slog.Logger
	// Vault, when set, puts the credential vault in charge of the token:
	// every token minted goes to Vault (the egress proxy's secrets file)
	// and never to disk in the token directory, whose token file holds
	// Placeholder instead. git in the container answers with the
	// placeholder, and the proxy swaps the real token in on the way out.
	Vault TokenVault
	// Placeholder is the vault's placeholder for the token; it is
	// required with Vault and never changes.
	Placeholder string
	// Store, when set, receives every token minted instead of a token
	// directory on the host: the daemon writes nothing to disk, needs no
	// RuntimeDir, and GitOrigin is the caller's to deliver. The kubernetes
	// backend's store is the sandbox Pod's Secret. Not with Vault.
	Store TokenStore
}

// TokenStore receives each installation token the daemon mints, when it
// keeps no token directory. SetToken must replace the stored value
// atomically; an error keeps the old value, and the daemon retries as for
// a failed mint.
type TokenStore interface {
	SetToken(ctx context.Context, value string) error
}

// TokenVault receives each installation token the daemon mints, in vault
// mode. SetToken must replace the vault's value atomically; an error
// keeps the old value, and the daemon retries as for a failed mint.
type TokenVault interface {
	SetToken(ctx context.Context, value string) error
}

// Daemon keeps one container's token file fresh.
type Daemon struct {
	opts    Options
	dir     string
	current github.Token
	fetched time.Time
}

// New checks opts and returns a daemon; nothing is created on disk yet.
func New(opts Options) (*Daemon, error) {
	var dir string
	if opts.Store == nil {
		dirName := opts.DirName
		if dirName == "" {
			dirName = opts.ContainerID
		}
		var err error
		if dir, err = TokenDir(opts.RuntimeDir, dirName); err != nil {
			return nil, err
		}
	}
	if opts.Source == nil || opts.Alive == nil {
		return nil, errors.New("tokendaemon: Options.Source and Options.Alive are required")
	}
	if opts.Store != nil && opts.Vault != nil {
		return nil, errors.New("tokendaemon: Options.Store and Options.Vault exclude each other")
	}
	if opts.Vault != nil {
		if err := checkTokenValue(opts.Placeholder); err != nil {
			return nil, errors.New("tokendaemon: Options.Placeholder must be a token-like value with Options.Vault")
		}
	}
	if len(opts.Repositories) == 0 {
		return nil, &errdefs.ContainerError{Op: "token daemon", Container: opts.ContainerID, Reason: errdefs.ErrRefused,
			Msg:  "no repository is known for this container, and podbot does not mint tokens with the installation's full grant",
			Hint: "launch the container again with this podbot (it labels the container " + "podbot.github_repo" + ")"}
	}
	if opts.RefreshBuffer <= 0 {
		opts.RefreshBuffer = DefaultRefreshBuffer
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = DefaultCheckInterval
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(DefaultMaxBackoff, opts.MinBackoff)
	}
	if opts.Clock == nil {
		opts.Clock = SystemClock{}
	}
	if opts.Jitter == nil {
		opts.Jitter = rand.Float64
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Logger = opts.Logger.With("container", opts.ContainerID)
	return &Daemon{opts: opts, dir: dir}, nil
}

// Dir is the container's token directory; mount it read-only at
// ContainerSecretsDir. It is empty with a Store.
func (d *Daemon) Dir() string { return d.dir }

// TokenPath is the token file on the host; empty with a Store.
func (d *Daemon) TokenPath() string {
	if d.dir == "" {
		return ""
	}
	return filepath.Join(d.dir, TokenFileName)
}

// Prepare creates the token directory and writes a first token, so a
// container can be started with the file in place. It returns the token
// (print it only through its redacting String or LogValue). Run continues
// from this token.
func (d *Daemon) Prepare(ctx context.Context) (github.Token, error) {
	if err := d.ensureDirs(); err != nil {
		return github.Token{}, err
	}
	if err := d.refresh(ctx); err != nil {
		return github.Token{}, err
	}
	return d.current, nil
}

// Run refreshes the token until the container stops or is gone (Alive
// reports false), then removes the directory and returns nil. It returns ctx.Err() when ctx ends first,
// leaving the directory (and the still valid token) in place. Run and
// Prepare must not be called concurrently.
func (d *Daemon) Run(ctx context.Context) error {
	if err := d.ensureDirs(); err != nil {
		return err
	}
	log := d.opts.Logger
	clock := d.opts.Clock
	var next time.Time // zero: refresh at once unless Prepare left a token
	if d.current.Value != "" {
		next = d.refreshAt()
	}
	var w *watcher
	if d.opts.Watch != nil {
		var stop func()
		w, stop = d.startWatch(ctx)
		defer stop()
	}
	failures := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		alive, err := d.opts.Alive(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			log.Warn("cannot tell whether the container is alive; keeping its token fresh", "err", err)
		case !alive && d.opts.Store != nil:
			log.Info("container stopped or gone; no more tokens for it")
			return nil
		case !alive:
			log.Info("container stopped or gone; removing its token directory", "dir", d.dir)
			return d.Remove()
		}
		now := clock.Now()
		if !now.Before(next) {
			if err := d.refresh(ctx); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				failures++
				wait := d.backoff(failures)
				next = now.Add(wait)
				if d.current.Valid(now) {
					log.Warn("token refresh failed; retrying while the current token is valid",
						"err", err, "attempt", failures, "retry_in", wait, "token", d.current)
				} else {
					log.Error("token refresh failed and no valid token is left; git in the container fails until a refresh succeeds",
						"err", err, "attempt", failures, "retry_in", wait)
				}
			} else {
				failures = 0
				// Never spin: a token that GitHub says is already due
				// (clock skew, tiny lifetime) is retried after MinBackoff.
				next = later(d.refreshAt(), now.Add(d.opts.MinBackoff))
				log.Info("token refreshed", "token", d.current, "next_refresh", next)
			}
		}
		if err := d.wait(ctx, w, next.Sub(now)); err != nil {
			return err
		}
	}
}

// Remove deletes the container's token directory; with a Store, whose
// owner removes what it holds, it does nothing.
func (d *Daemon) Remove() error {
	if d.opts.Store != nil {
		return nil
	}
	if err := os.RemoveAll(d.dir); err != nil {
		return &errdefs.FilesystemError{Op: "remove", Path: d.dir, Msg: "cannot remove the token directory", Err: err}
	}
	return nil
}

func (d *Daemon) ensureDirs() error {
	if d.opts.Store != nil {
		return nil
	}
	if err := ensurePrivateDir(filepath.Dir(d.dir)); err != nil {
		return err
	}
	if err := ensurePrivateDir(d.dir); err != nil {
		return err
	}
	if d.opts.GitOrigin != (gitcred.Origin{}) {
		return writeOriginFile(d.dir, d.opts.GitOrigin)
	}
	return nil
}

// refresh mints a token and writes it; on failure the old one stays.
func (d *Daemon) refresh(ctx context.Context) error {
	fetched := d.opts.Clock.Now()
	tok, err := d.opts.Source.InstallationToken(ctx, d.opts.Repositories)
	if err != nil {
		return err
	}
	switch {
	case d.opts.Store != nil:
		if err := checkTokenValue(tok.Value); err != nil {
			return err
		}
		if err := d.opts.Store.SetToken(ctx, tok.Value); err != nil {
			return err
		}
	case d.opts.Vault != nil:
		if err := checkTokenValue(tok.Value); err != nil {
			return err
		}
		if err := d.opts.Vault.SetToken(ctx, tok.Value); err != nil {
			return err
		}
		// The placeholder goes in after the vault holds the real value,
		// so git never sends a placeholder the proxy cannot swap yet.
		if err := writeTokenFile(d.dir, d.opts.Placeholder); err != nil {
			return err
		}
	default:
		if err := writeTokenFile(d.dir, tok.Value); err != nil {
			return err
		}
	}
	d.current, d.fetched = tok, fetched
	return nil
}

// refreshAt is when the current token should be replaced: RefreshBuffer
// before its expiry, or half way through a lifetime shorter than twice the
// buffer.
func (d *Daemon) refreshAt() time.Time {
	lifetime := d.current.ExpiresAt.Sub(d.fetched)
	buffer := min(d.opts.RefreshBuffer, lifetime/2)
	return d.current.ExpiresAt.Add(-buffer)
}

// backoff returns the wait after the n-th consecutive failure: MinBackoff
// doubled per failure up to MaxBackoff, with "equal jitter" (between half
// and all of it).
func (d *Daemon) backoff(n int) time.Duration {
	base := d.opts.MinBackoff
	for i := 1; i < n && base < d.opts.MaxBackoff; i++ {
		base *= 2
	}
	base = min(base, d.opts.MaxBackoff)
	half := base / 2
	return half + time.Duration(d.opts.Jitter()*float64(base-half))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
