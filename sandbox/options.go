package sandbox

import (
	"log/slog"
	"time"

	"github.com/podbot/podbot/creds"
)

// Options are the settings both backends share.
type Options struct {
	// ID names the session (letters, digits, '.', '_', '-'); empty
	// generates one.
	ID string
	// WorkspaceRoot is the host directory under which the session's
	// directory is made. Empty selects DefaultWorkspaceRoot for the
	// container backend and os.TempDir() for the unsafe local backend.
	WorkspaceRoot string
	// Mounts hydrate the new workspace by copying host files into it.
	Mounts []HostMount
	// AllowedHostRoots are the host directories Mounts may copy from;
	// with none, any mount is refused.
	AllowedHostRoots []string
	// ShellTimeout is the default shell_execute timeout, applied when a
	// call gives none; 0 keeps the tools' default (30 s).
	ShellTimeout time.Duration
	// OnEvent receives every tool call and lifecycle event; nil drops them.
	OnEvent func(Event)
	// Redactor masks secrets in the parameters events carry; nil masks nothing.
	Redactor *creds.Redactor
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Clock returns the current time; nil uses time.Now.
	Clock func() time.Time
}

// ContainerOptions configure the container backend. Zero values select
// the launchplan tool-session defaults.
type ContainerOptions struct {
	Options
	// Image is the sandbox image; it needs no podbot software (the sidecar
	// is mounted in), only python3 for evaluate_python. Required.
	Image string
	// SidecarPath is the host path of the podbot-sidecar binary, mounted
	// read-only at SidecarTarget. The engine must run on this host. Required.
	SidecarPath string
	// User is the user the tools run as (default 65534:65534).
	User string
	// Network is the network mode (default none).
	Network string
	// EngineNetwork, when set, makes each container's network instead
	// (see EngineNetwork); Network should then be none, what a container
	// gets should the hook not run. Engine backend only.
	EngineNetwork EngineNetwork
	// PidsLimit, MemoryBytes and NanoCPUs are the container's limits; zero
	// selects the default (512, 1 GiB, 1 CPU), a negative value none.
	PidsLimit, MemoryBytes, NanoCPUs int64
	// CPUSet places the container on CPUs: CPUSetAuto (also the empty
	// string) pins it to as many CPUs as its CPU limit rounds up to when
	// that is fewer than the host has, CPUSetNone never pins, and a CPU
	// list such as "0-1" pins it there. A pinned session's commands start
	// on the CPU its sidecar runs on, which makes a short command's round
	// trip cheaper, and nproc inside reports the pinned CPUs.
	CPUSet string
	// ReadOnlyRootfs, when set, overrides the read-only root (default true).
	ReadOnlyRootfs *bool
	// BatchScheduling, when set, overrides SCHED_BATCH for the sidecar and
	// the commands it starts (default true): a batch thread that wakes up
	// waits for the running one instead of preempting it, so the sidecar's
	// wake-ups do not take the CPU from a command in a one-CPU sandbox.
	BatchScheduling *bool
	// IdleTimeout removes the container after this long without a call
	// (it is recreated, workspace intact, on the next call); 0 never.
	IdleTimeout time.Duration
	// MaxUptime removes the container this long after it started, whatever
	// it is doing; the next call starts a new one. 0 means no limit.
	MaxUptime time.Duration
	// EngineSocketPaths are host paths that must never be mounted into the
	// container (the engine socket and what it resolves to).
	EngineSocketPaths []string
	// Labels are extra container labels (keys under podbot. are reserved).
	Labels map[string]string
	// Version is podbot's version, recorded in a label and announced to the sidecar.
	Version string
	// SidecarLink is how the host reaches the sidecar: SidecarLinkAuto
	// (also "") uses a unix socket in a per-session link directory where
	// the runtime can give the container one (podbot as root on Linux, a
	// numeric user) and an exec stream elsewhere; SidecarLinkExec always
	// uses an exec stream.
	SidecarLink string
}

// LocalOptions configure the unsafe local backend.
type LocalOptions struct {
	Options
	// Env is the base environment of commands ("KEY=value"); nil gives a
	// minimal one (PATH, HOME, LANG) so nothing of the caller leaks.
	Env []string
	// Python is the interpreter evaluate_python runs (default python3).
	Python string
}
