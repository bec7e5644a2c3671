package podbot

import (
	"context"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/pool"
	"github.com/podbot/podbot/sandbox"
	"github.com/podbot/podbot/tools"
)

// ToolSession is a sandboxed tool session: shell, files and Python over
// one tool surface, identical on every backend (see package sandbox).
type ToolSession = sandbox.Session

// ToolEvent is one tool call or lifecycle change of a ToolSession.
type ToolEvent = sandbox.Event

// ToolHostMount copies host files into a new tool session's workspace.
type ToolHostMount = sandbox.HostMount

// Tool session backends.
const (
	// ToolBackendContainer runs the tools in a hardened container.
	ToolBackendContainer = sandbox.BackendContainer
	// ToolBackendUnsafeLocal runs the tools on a host temp directory with
	// no isolation; use it only inside a sandbox of your own.
	ToolBackendUnsafeLocal = sandbox.BackendUnsafeLocal
)

// ToolSessionOptions are the inputs of NewToolSession. Zero values take
// the configuration's [tools] section.
type ToolSessionOptions struct {
	// Config is the loaded configuration.
	Config config.Config
	// Backend is ToolBackendContainer (default) or ToolBackendUnsafeLocal.
	Backend string
	// Image overrides tools.image.
	Image string
	// WorkspaceRoot overrides tools.workspace_root; with neither, session
	// workspaces go under sandbox.DefaultWorkspaceRoot() (container) or
	// the system temp directory (unsafe local).
	WorkspaceRoot string
	// SidecarPath is the host's podbot-sidecar binary (container backend).
	SidecarPath string
	// RuntimeDir is $XDG_RUNTIME_DIR: with tools.network = "allowlist" on
	// the engine, each container's egress policy and decision log go under
	// it (egressnet.StateRoot; the user's cache directory when empty).
	RuntimeDir string
	// Mounts hydrate the workspace from tools.allowed_host_roots.
	Mounts []ToolHostMount
	// ID names the session; empty generates one.
	ID string
	// OnEvent receives every tool call and lifecycle event.
	OnEvent func(ToolEvent)
	// Redactor masks secrets in event parameters.
	Redactor *creds.Redactor
	// Logger receives diagnostics.
	Logger *slog.Logger
	// Pool, when set, claims a ready member of this warm pool (container
	// backend only): the session starts on it at once. An empty pool
	// falls back to a cold session made from the pool's template, after
	// waiting up to PoolWait for a member when that is positive.
	Pool *pool.Spec
	// PoolWait is how long a claim waits for a ready member.
	PoolWait time.Duration
	// OnClaim, when set, learns how a Pool claim went.
	OnClaim func(ClaimReport)
	// SidecarLink is sandbox.SidecarLinkAuto (default: the sidecar's unix
	// socket where podbot can give the sandbox one, else an exec stream)
	// or sandbox.SidecarLinkExec.
	SidecarLink string
}

// ParseToolBackend accepts "container", "unsafe-local" and its short
// forms "local" and "unsafe", and returns the backend name.
func ParseToolBackend(s string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "container":
		return ToolBackendContainer, nil
	case "local", "unsafe", "unsafe-local":
		return ToolBackendUnsafeLocal, nil
	}
	return "", &errdefs.ConfigError{Key: "backend", Reason: errdefs.ErrInvalidValue,
		Msg: "unknown tool backend " + s + "; use container or local (the unsafe local backend)"}
}

// ToolSpecs describes the tools a backend offers (podman_shell only on the
// container backend).
func ToolSpecs(backend string) []tools.Spec {
	if backend == ToolBackendUnsafeLocal {
		return tools.Specs()
	}
	return append(tools.Specs(), tools.PodmanShellSpec())
}

// ToolPrompt is the text that tells a model what a backend's tools are.
func ToolPrompt(backend string) string {
	if backend == ToolBackendUnsafeLocal {
		return tools.UnsafePrompt()
	}
	return tools.Prompt()
}

// NewToolSession opens a tool session. The container backend needs conn
// and SidecarPath and creates its container lazily on the first call; the
// unsafe local backend ignores conn. On the kubernetes sandbox backend the
// container backend is NewKubeToolSession's, and refused here. Close the session to remove its
// container and workspace.
//
// With tools.network = "allowlist" each container the session starts is
// an allowlist sandbox of its own: an internal network and an egress proxy
// named after it (as podbot run makes them), the policy of the [network]
// section (toolsEgress), the proxy variables in its environment and its
// network closed by netlock before the first call reaches it. podbot
// network show, log, allow and deny take the container's name. Removing
// the container (Close, idle timeout, max uptime, a failed start) removes
// the proxy, the network and the policy directory with it; a container
// started later begins with the configured policy again. Warm pools
// (opts.Pool) are refused with it (errToolsAllowlistPool).
func NewToolSession(ctx context.Context, conn *engine.Conn, opts ToolSessionOptions) (ToolSession, error) {
	t := opts.Config.Tools
	common := sandbox.Options{
		ID:               opts.ID,
		WorkspaceRoot:    toolsFirstSet(opts.WorkspaceRoot, t.WorkspaceRoot),
		Mounts:           opts.Mounts,
		AllowedHostRoots: t.AllowedHostRoots,
		ShellTimeout:     t.ShellTimeout,
		OnEvent:          opts.OnEvent,
		Redactor:         opts.Redactor,
		Logger:           opts.Logger,
	}
	backend, err := ParseToolBackend(opts.Backend)
	if err != nil {
		return nil, err
	}
	if backend == ToolBackendUnsafeLocal {
		if opts.Pool != nil {
			return nil, &errdefs.ConfigError{Key: "backend", Reason: errdefs.ErrConflict,
				Msg: "warm pools hold containers; the unsafe local backend cannot claim from pool " + opts.Pool.Name}
		}
		l, err := sandbox.NewUnsafeLocal(ctx, sandbox.LocalOptions{Options: common})
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	if opts.Config.Sandbox.Backend == config.BackendKubernetes {
		return nil, &errdefs.ConfigError{Key: "sandbox.backend", Reason: errdefs.ErrUnsupported,
			Msg: "NewToolSession runs the container backend on an engine; with sandbox.backend = \"kubernetes\" open the session with NewKubeToolSession (package podbot built with -tags kubernetes)"}
	}
	copts := containerOptions(conn, opts, common)
	if err := withToolsEgress(conn, opts, &copts); err != nil {
		return nil, err
	}
	if opts.Pool != nil {
		return claimToolSession(ctx, conn, opts, copts)
	}
	c, err := sandbox.NewContainer(ctx, conn, copts)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func engineSocketPathsOf(conn *engine.Conn) []string {
	if conn == nil {
		return nil
	}
	return EngineSocketPaths(conn.Endpoint())
}

func toolsFirstSet(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// containerOptions maps the configuration's [tools] section, opts'
// overrides and opts.Pool's template to the container backend's options.
// Pool members are made from the same options, so a claimed member and a
// cold session get the same plan.
func containerOptions(conn *engine.Conn, opts ToolSessionOptions, common sandbox.Options) sandbox.ContainerOptions {
	t := opts.Config.Tools
	if opts.Pool != nil {
		applyToolsTemplate(&t, *opts.Pool)
	}
	unlimitedIfZero := func(v int64) int64 {
		if v == 0 {
			return -1
		}
		return v
	}
	ro, batch := t.ReadOnlyRootfs, t.BatchScheduling
	image := toolsFirstSet(opts.Image, t.Image)
	return sandbox.ContainerOptions{
		Options:           common,
		Image:             image,
		SidecarPath:       opts.SidecarPath,
		User:              t.User,
		Network:           t.Network,
		PidsLimit:         unlimitedIfZero(t.PidsLimit),
		MemoryBytes:       unlimitedIfZero(t.Memory.Bytes()),
		NanoCPUs:          unlimitedIfZero(int64(math.Round(t.CPUs * 1e9))),
		CPUSet:            t.CPUSet,
		ReadOnlyRootfs:    &ro,
		BatchScheduling:   &batch,
		IdleTimeout:       t.IdleTimeout,
		MaxUptime:         t.MaxUptime,
		EngineSocketPaths: engineSocketPathsOf(conn),
		Version:           Version,
		SidecarLink:       opts.SidecarLink,
	}
}

// ToolRunning is a running tool-session container handed from one holder
// to another; see AdoptToolSession.
type ToolRunning = sandbox.Running

// AdoptToolSession returns a container tool session for a running
// container that another session released (sandbox.Container.Release),
// in this process or another, with the options it was opened with. No
// container is created and no exec is made: the first call connects over
// the container's sidecar socket when it has one. Close removes the
// container and the session directory.
func AdoptToolSession(ctx context.Context, conn *engine.Conn, opts ToolSessionOptions, r ToolRunning) (ToolSession, error) {
	common := sandbox.Options{
		ShellTimeout:     opts.Config.Tools.ShellTimeout,
		AllowedHostRoots: opts.Config.Tools.AllowedHostRoots,
		OnEvent:          opts.OnEvent,
		Redactor:         opts.Redactor,
		Logger:           opts.Logger,
	}
	copts := containerOptions(conn, opts, common)
	if err := withToolsEgress(conn, opts, &copts); err != nil {
		return nil, err
	}
	c, err := sandbox.AdoptContainer(ctx, conn, copts, r)
	if err != nil {
		return nil, err
	}
	return c, nil
}
