package tokendaemon

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podbot/podbot/gitcred"
)

// DefaultListInterval is how often a Manager asks for containers.
const DefaultListInterval = 30 * time.Second

// Target is one container that needs tokens, with what its tokens are for.
type Target struct {
	// ID is the container id or name; it names the token directory
	// unless DirName does.
	ID string
	// DirName, when set, names the token directory (Options.DirName).
	DirName string
	// Repositories limit the container's tokens (Options.Repositories).
	Repositories []string
	// GitOrigin is where git in the container may send them
	// (Options.GitOrigin).
	GitOrigin gitcred.Origin
	// Vault and Placeholder, when Vault is set, put the container's token
	// in the credential vault (Options.Vault, Options.Placeholder).
	Vault       TokenVault
	Placeholder string
	// Store, when set, receives the container's tokens instead of a token
	// directory (Options.Store); ManagerOptions.Stores requires it.
	Store TokenStore
}

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	// Daemon holds the settings shared by every container's daemon; its
	// ContainerID, Alive, Watch, Repositories, GitOrigin, Vault, Placeholder and Store
	// fields are taken from each Target.
	Daemon Options
	// List returns the containers that need tokens.
	List func(ctx context.Context) ([]Target, error)
	// Alive reports whether the container id is running.
	Alive func(ctx context.Context, id string) (bool, error)
	// Watch, when set, follows the engine's events for the container id
	// (Options.Watch).
	Watch func(ctx context.Context, id string, changed func()) error
	// ListInterval is how often List is called.
	ListInterval time.Duration
	// Changes, when set, follows events that may bring new containers (a
	// cluster's watch of its Pods): it calls changed once it follows them
	// and after each such event, and returns when it stops following. Each
	// call of changed makes Run list at once instead of at the next
	// ListInterval. When Changes fails, Run lists every ListInterval and
	// calls it again after a backoff between Daemon.MinBackoff and
	// Daemon.MaxBackoff.
	Changes func(ctx context.Context, changed func()) error
	// Stores says that every Target brings its own Store: no daemon keeps a
	// token directory, and Daemon.RuntimeDir is not needed.
	Stores bool
}

// Manager runs one Daemon per container that needs a token, starting
// daemons for new containers as List reports them. Each daemon stops on its
// own when its container stops or is gone; List names it again once it runs.
type Manager struct {
	opts ManagerOptions
	log  *slog.Logger

	mu      sync.Mutex
	running map[string]bool
}

// NewManager checks opts and returns a manager.
func NewManager(opts ManagerOptions) (*Manager, error) {
	if opts.List == nil || opts.Alive == nil || opts.Daemon.Source == nil {
		return nil, errors.New("tokendaemon: ManagerOptions.List, Alive and Daemon.Source are required")
	}
	if !opts.Stores {
		if _, err := TokenDir(opts.Daemon.RuntimeDir, "probe"); err != nil {
			return nil, err
		}
	}
	if opts.ListInterval <= 0 {
		opts.ListInterval = DefaultListInterval
	}
	if opts.Daemon.Clock == nil {
		opts.Daemon.Clock = SystemClock{}
	}
	log := opts.Daemon.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{opts: opts, log: log, running: map[string]bool{}}, nil
}

// Running returns the ids whose daemons are running, sorted.
func (m *Manager) Running() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]string, 0, len(m.running))
	for id := range m.running {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Run lists containers every ListInterval (and at each change Changes
// reports) and starts a daemon for each new one until ctx ends; it then
// waits for the daemons and returns nil.
func (m *Manager) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	var wake chan struct{}
	if m.opts.Changes != nil {
		wake = make(chan struct{}, 1)
		fctx, cancel := context.WithCancel(ctx)
		var fwg sync.WaitGroup
		fwg.Go(func() { m.followChanges(fctx, wake) })
		defer func() { cancel(); fwg.Wait() }()
	}
	refused := map[string]bool{} // ids already reported as unusable
	for {
		targets, err := m.opts.List(ctx)
		if err != nil && ctx.Err() == nil {
			m.log.Warn("cannot list containers that need tokens", "err", err)
		}
		for _, target := range targets {
			if ctx.Err() != nil {
				break
			}
			m.start(ctx, &wg, target, refused)
		}
		if err := m.sleep(ctx, wake); err != nil {
			return nil
		}
	}
}

// sleep waits ListInterval, or until wake receives a value or ctx ends.
func (m *Manager) sleep(ctx context.Context, wake <-chan struct{}) error {
	if wake == nil {
		return m.opts.Daemon.Clock.Sleep(ctx, m.opts.ListInterval)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slept := make(chan error, 1)
	go func() { slept <- m.opts.Daemon.Clock.Sleep(sctx, m.opts.ListInterval) }()
	select {
	case <-wake:
		cancel()
		<-slept
		return ctx.Err()
	case <-slept:
		return ctx.Err()
	}
}

// followChanges calls Changes until ctx ends, poking wake at each change,
// with backoff between failed tries; a follow that worked resets it.
func (m *Manager) followChanges(ctx context.Context, wake chan<- struct{}) {
	minB, maxB := m.opts.Daemon.MinBackoff, m.opts.Daemon.MaxBackoff
	if minB <= 0 {
		minB = DefaultMinBackoff
	}
	if maxB < minB {
		maxB = max(DefaultMaxBackoff, minB)
	}
	wait := minB
	for {
		var up atomic.Bool // changed may run on another goroutine, even late
		err := m.opts.Changes(ctx, func() {
			up.Store(true)
			select {
			case wake <- struct{}{}:
			default:
			}
		})
		if ctx.Err() != nil {
			return
		}
		if up.Load() {
			wait = minB
		}
		m.log.Warn("cannot follow changes; looking for new containers every list interval meanwhile",
			"err", err, "list_interval", m.opts.ListInterval, "retry_in", wait)
		if m.opts.Daemon.Clock.Sleep(ctx, wait) != nil {
			return
		}
		wait = min(wait*2, maxB)
	}
}

func (m *Manager) start(ctx context.Context, wg *sync.WaitGroup, target Target, refused map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := target.ID
	if m.running[id] {
		return
	}
	opts := m.opts.Daemon
	opts.ContainerID, opts.DirName = id, target.DirName
	opts.Repositories = slices.Clone(target.Repositories)
	opts.GitOrigin = target.GitOrigin
	opts.Vault, opts.Placeholder = target.Vault, target.Placeholder
	opts.Store = target.Store
	if m.opts.Stores && opts.Store == nil {
		if !refused[id] {
			refused[id] = true
			m.log.Warn("cannot keep a token for this container: it names no token store", "container", id)
		}
		return
	}
	opts.Alive = func(ctx context.Context) (bool, error) { return m.opts.Alive(ctx, id) }
	if m.opts.Watch != nil {
		opts.Watch = func(ctx context.Context, changed func()) error { return m.opts.Watch(ctx, id, changed) }
	}
	d, err := New(opts)
	if err != nil {
		if !refused[id] {
			refused[id] = true
			m.log.Warn("cannot keep a token for this container", "container", id, "err", err)
		}
		return
	}
	m.running[id] = true
	wg.Go(func() {
		defer func() {
			m.mu.Lock()
			delete(m.running, id)
			m.mu.Unlock()
		}()
		if err := d.Run(ctx); err != nil && ctx.Err() == nil {
			m.log.Error("token daemon stopped", "container", id, "err", err)
		}
	})
}
