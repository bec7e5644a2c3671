package pool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"time"

	"github.com/podbot/podbot/errdefs"
)

// Pool kinds.
const (
	// KindTools members are tool-session containers (podbot tools).
	KindTools = "tools"
	// KindAgent members are sandboxes as podbot create makes them.
	KindAgent = "agent"
)

// MaxSize bounds a pool's size.
const MaxSize = 64

// Spec declares one pool: its members' kind, how many to keep ready and
// the launch template they are created from. Zero template fields take the
// configuration of the process that creates the members.
type Spec struct {
	// Name names the pool (ValidName).
	Name string `json:"name" koanf:"name"`
	// Kind is KindTools (default) or KindAgent.
	Kind string `json:"kind" koanf:"kind"`
	// Size is how many ready members the refiller keeps.
	Size int `json:"size" koanf:"size"`
	// Image overrides the kind's image (tools.image or image).
	Image string `json:"image,omitempty" koanf:"image"`
	// Network overrides the kind's network (tools.network or
	// network.mode); agent pools take allowlist, none or open.
	Network string `json:"network,omitempty" koanf:"network"`
	// MemoryBytes overrides the memory limit when positive.
	MemoryBytes int64 `json:"memory_bytes,omitempty" koanf:"-"`
	// NanoCPUs overrides the CPU limit when positive (1e9 is one CPU).
	NanoCPUs int64 `json:"nano_cpus,omitempty" koanf:"-"`
	// PidsLimit overrides the process limit when positive.
	PidsLimit int64 `json:"pids_limit,omitempty" koanf:"pids_limit"`
	// ReadOnlyRootfs, when set, overrides the read-only root setting.
	ReadOnlyRootfs *bool `json:"read_only_rootfs,omitempty" koanf:"-"`
	// Backend is the sandbox backend whose members the pool keeps:
	// BackendEngine (also when empty) or BackendKubernetes.
	Backend string `json:"backend,omitempty" koanf:"-"`
}

// Backends a pool's members live on (Spec.Backend).
const (
	// BackendEngine members are containers of Podman or Docker.
	BackendEngine = "engine"
	// BackendKubernetes members are Pods of a cluster.
	BackendKubernetes = "kubernetes"
)

// OnBackend reports whether the pool's members live on backend (an empty
// Spec.Backend is the engine).
func (s Spec) OnBackend(backend string) bool {
	b := s.Backend
	if b == "" {
		b = BackendEngine
	}
	if backend == "" {
		backend = BackendEngine
	}
	return b == backend
}

// namePattern is what a pool name may look like: it becomes part of
// container names and of file names in the state directory.
var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,23}$`)

// ValidName checks a pool name: 1 to 24 lower-case letters, digits and
// dashes, starting with a letter or digit.
func ValidName(name string) error {
	if !namePattern.MatchString(name) {
		return &errdefs.ConfigError{Key: "pool name", Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("pool name %q: use 1 to 24 lower-case letters, digits and dashes, starting with a letter or digit", truncate(name, 40))}
	}
	return nil
}

// Check validates spec and fills in the default kind.
func (s *Spec) Check() error {
	if err := ValidName(s.Name); err != nil {
		return err
	}
	switch s.Kind {
	case "":
		s.Kind = KindTools
	case KindTools, KindAgent:
	default:
		return &errdefs.ConfigError{Key: "pool kind", Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("pool %s: kind %q is unknown; use tools or agent", s.Name, truncate(s.Kind, 40))}
	}
	if s.Size < 0 || s.Size > MaxSize {
		return &errdefs.ConfigError{Key: "pool size", Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("pool %s: size %d is out of range; use 0 to %d", s.Name, s.Size, MaxSize)}
	}
	switch s.Backend {
	case "", BackendEngine, BackendKubernetes:
	default:
		return &errdefs.ConfigError{Key: "pool backend", Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("pool %s: backend %q is unknown; use engine or kubernetes", s.Name, truncate(s.Backend, 40))}
	}
	if s.MemoryBytes < 0 || s.NanoCPUs < 0 || s.PidsLimit < 0 {
		return &errdefs.ConfigError{Key: "pool limits", Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("pool %s: memory, cpus and pids_limit must not be negative", s.Name)}
	}
	return nil
}

// Member states.
const (
	// StateReady members are parked and may be claimed.
	StateReady = "ready"
	// StateStarting members are still being made (or were left half-made).
	StateStarting = "starting"
	// StateFailed members stopped or died; they are removed and replaced.
	StateFailed = "failed"
	// StateClaimed members were handed out: ordinary sandboxes now,
	// no longer the pool's to replace or remove.
	StateClaimed = "claimed"
)

// Member is one sandbox of a pool.
type Member struct {
	// Pool names the pool.
	Pool string `json:"pool"`
	// ID is the backend's id of the member (the container id).
	ID string `json:"id"`
	// Name is the member's current name.
	Name string `json:"name"`
	// State is StateReady, StateStarting, StateFailed or StateClaimed.
	State string `json:"state"`
	// Created is when the member was created.
	Created time.Time `json:"created"`
	// Dir is the member's host directory (a tools member's workspace
	// parent), empty for kinds without one.
	Dir string `json:"dir,omitempty"`
	// Version is the backend's version of the member when it was listed
	// (a Kubernetes resourceVersion), which Take and Remove can make their
	// precondition; empty on backends without one.
	Version string `json:"version,omitempty"`
}

// ErrTaken is what Backend.Take returns when another caller took the
// member first (or it is no longer parked).
var ErrTaken = errors.New("pool member already taken")

// Backend owns the members of pools on one sandbox backend.
type Backend interface {
	// Members lists every member of the pool, claimed ones included.
	Members(ctx context.Context, pool string) ([]Member, error)
	// Create makes one member of spec: created, started, its sidecar
	// answering, then parked in StateReady. On failure it leaves nothing
	// behind that Members would report as ready.
	Create(ctx context.Context, spec Spec) (Member, error)
	// Take hands member m to the caller atomically: of any number of
	// callers (in any number of processes) at most one succeeds; the
	// others get an error matching ErrTaken. A taken member is running
	// and the caller's to adopt or remove.
	Take(ctx context.Context, m Member) error
	// Remove removes member m and what the backend made for it. A ready
	// member is taken first, so no claimer can get it meanwhile.
	Remove(ctx context.Context, m Member) error
}

// Claimer is implemented by a backend that claims in one call of its own
// instead of Members and Take: on Kubernetes, creating a SandboxClaim that
// names the pool's SandboxWarmPool and waiting until the controller binds
// it to a ready sandbox (the API server's optimistic concurrency makes the
// binding exclusive). It returns what Claim returns.
type Claimer interface {
	ClaimMember(ctx context.Context, pool string, wait time.Duration) (m Member, waited bool, err error)
}

// Scanner is implemented by a backend that can name a pool's likely-ready
// members more cheaply than Members: the engine backend reads the records
// its tools members keep in podbot's own directories instead of listing
// the engine's containers. Scan may name members that were claimed or
// removed meanwhile and may miss some; Claim tries the members it names
// first, each with Take (which alone decides who gets one), and lists
// with Members only when none of them could be taken.
type Scanner interface {
	Scan(ctx context.Context, pool string) ([]Member, error)
}

// ErrEmpty is the reason of the error Claim returns when the pool had no
// ready member (within the wait).
var ErrEmpty = errors.New("pool has no ready member")

// EmptyError reports a pool with no ready member.
type EmptyError struct {
	// Pool names the pool.
	Pool string
	// Waited is how long the claim waited.
	Waited time.Duration
}

// Error says which pool was empty and how long the claim waited.
func (e *EmptyError) Error() string {
	if e.Waited > 0 {
		return fmt.Sprintf("pool %s had no ready member within %s", e.Pool, e.Waited.Round(time.Millisecond))
	}
	return "pool " + e.Pool + " has no ready member"
}

// Is matches ErrEmpty and errdefs.ErrNotFound.
func (e *EmptyError) Is(target error) bool {
	return target == ErrEmpty || target == errdefs.ErrNotFound
}

// pollInterval is how often a waiting claim looks for a ready member.
const pollInterval = 50 * time.Millisecond

// Claim takes one ready member of pool from b. Ready members are tried in
// random order, so concurrent claimers mostly try different ones; a member
// another claimer took first is skipped. With wait > 0 an empty pool is
// polled until a member is ready or wait has passed; then (or at once
// with wait 0) the error matches ErrEmpty. waited reports that the pool
// was empty at first and the member came during the wait.
//
// A backend that implements Scanner is scanned first in each pass; one
// that implements Claimer claims through it instead.
func Claim(ctx context.Context, b Backend, pool string, wait time.Duration) (m Member, waited bool, err error) {
	if c, ok := b.(Claimer); ok {
		return c.ClaimMember(ctx, pool, wait)
	}
	start := time.Now()
	scanner, _ := b.(Scanner)
	for pass := 0; ; pass++ {
		var lastErr error
		tried := map[string]bool{}
		// try takes the first of ms that Take gives this caller.
		try := func(ms []Member) (Member, bool, error) {
			rand.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
			for _, m := range ms {
				if tried[m.ID] {
					continue
				}
				tried[m.ID] = true
				err := b.Take(ctx, m)
				if err == nil {
					return m, true, nil
				}
				if !errors.Is(err, ErrTaken) {
					lastErr = err
				}
				if ctx.Err() != nil {
					return Member{}, false, ctx.Err()
				}
			}
			return Member{}, false, nil
		}
		if scanner != nil {
			// A scan that fails is no answer: the list below decides.
			if ms, err := scanner.Scan(ctx, pool); err == nil {
				if m, ok, err := try(ms); ok || err != nil {
					return m, ok && pass > 0, err
				}
			}
		}
		ms, err := b.Members(ctx, pool)
		if err != nil {
			return Member{}, false, err
		}
		ready := make([]Member, 0, len(ms))
		for _, m := range ms {
			if m.State == StateReady {
				ready = append(ready, m)
			}
		}
		if m, ok, err := try(ready); ok || err != nil {
			return m, ok && pass > 0, err
		}
		waited := time.Since(start)
		if waited >= wait {
			if lastErr != nil {
				return Member{}, false, lastErr
			}
			return Member{}, false, &EmptyError{Pool: pool, Waited: min(waited, wait)}
		}
		t := time.NewTimer(min(pollInterval, wait-waited))
		select {
		case <-ctx.Done():
			t.Stop()
			return Member{}, false, ctx.Err()
		case <-t.C:
		}
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
