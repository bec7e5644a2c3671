package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/sandbox"
)

// toolsOptions are the flags of the podbot tools subcommands.
type toolsOptions struct {
	backend string
	json    bool
	args    string
	name    string
	mounts  []string
	pool    string
	wait    time.Duration
}

func newToolsCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Sandboxed shell, file and Python tools for host programs, over MCP",
		Long: `Give host programs (an LLM driver, Claude Desktop, Codex, an IDE) a sandboxed
shell, file tools and Python over one tool surface.

The container backend (the default) runs the tools in a hardened container:
user 65534:65534, no network, 1 GiB, 1 CPU, read-only root, /workspace the
only writable mount. tools.network = "allowlist" gives it an egress proxy
instead, letting through only the hosts of network.allow and network.presets. The container is created on the first call, and
podbot-sidecar (mounted in read-only from the host) serves every call over
one MCP stream. Image, limits and timeouts come from the [tools] section of
the configuration (PODBOT_TOOLS_*).

--backend local selects the unsafe local backend: the same tools on a
temporary host directory, run as you, with NO isolation. Use it only when
podbot itself already runs inside a sandbox.`,
	}
	cmd.AddCommand(newToolsListCmd(f), newToolsCallCmd(f), newToolsServeCmd(f))
	return cmd
}

func addBackendFlag(cmd *cobra.Command, opts *toolsOptions) {
	cmd.Flags().StringVar(&opts.backend, "backend", "container",
		"tool backend: container (on sandbox.backend: the engine, or a Pod on kubernetes), engine, kubernetes, or local (unsafe: no isolation)")
}

// toolsSandboxBackends are the tools --backend values that name a sandbox
// backend: the tools run in a container there. The tools commands' own
// --backend flag hides the global one, so it takes these too.
var toolsSandboxBackends = map[string]bool{config.BackendEngine: true, config.BackendKubernetes: true}

// applyToolsBackend makes `podbot tools ... --backend engine|kubernetes`
// select that sandbox backend (as the global --backend does elsewhere) and
// the container tool backend. It runs before the configuration is loaded.
func (f *factory) applyToolsBackend(cmd *cobra.Command) {
	if topCommand(cmd).Name() != "tools" {
		return
	}
	fl := cmd.Flags().Lookup("backend")
	if fl == nil || !toolsSandboxBackends[strings.ToLower(fl.Value.String())] {
		return
	}
	f.global.backend = strings.ToLower(fl.Value.String())
	_ = fl.Value.Set(podbot.ToolBackendContainer)
}

func addPoolFlags(cmd *cobra.Command, opts *toolsOptions) {
	cmd.Flags().StringVar(&opts.pool, "pool", "", "claim a ready container from tools pool `NAME` (see podbot pool); an empty pool starts one cold from the pool's template")
	cmd.Flags().DurationVar(&opts.wait, "wait", 0, "with --pool: wait up to `DURATION` for a ready member before starting cold")
}

func addMountFlag(cmd *cobra.Command, opts *toolsOptions) {
	cmd.Flags().StringArrayVar(&opts.mounts, "mount", nil,
		"copy `HOST_PATH[:WORKSPACE_PATH]` into /workspace before the first call (must lie under tools.allowed_host_roots)")
}

// parseMounts turns --mount values into host mounts.
func parseMounts(vals []string) ([]podbot.ToolHostMount, error) {
	var out []podbot.ToolHostMount
	for _, v := range vals {
		host, target, _ := strings.Cut(v, ":")
		if host == "" || !filepath.IsAbs(host) {
			return nil, &usageError{msg: fmt.Sprintf("--mount %q: give an absolute host path, optionally followed by :WORKSPACE_PATH", v)}
		}
		out = append(out, podbot.ToolHostMount{HostPath: host, MountPath: target})
	}
	return out, nil
}

func newToolsListCmd(f *factory) *cobra.Command {
	opts := &toolsOptions{}
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the tools and their parameters",
		Example: "  podbot tools list\n  podbot tools list --json | jq -r '.[].name'",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			backend, err := podbot.ParseToolBackend(opts.backend)
			if err != nil {
				return &usageError{msg: err.Error()}
			}
			specs := podbot.ToolSpecs(backend)
			if opts.json {
				return writeJSON(f.ios.Out, specs)
			}
			tw := tabwriter.NewWriter(f.ios.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tKIND\tDESCRIPTION")
			for _, s := range specs {
				kind := "changes files"
				if s.ReadOnly {
					kind = "read-only"
				}
				desc, _, _ := strings.Cut(s.Description, ". ")
				fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, kind, strings.TrimSuffix(desc, "."))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the tool specs (with input schemas) as JSON")
	addBackendFlag(cmd, opts)
	return cmd
}

func newToolsCallCmd(f *factory) *cobra.Command {
	opts := &toolsOptions{}
	cmd := &cobra.Command{
		Use:   "call NAME --args JSON",
		Short: "Call one tool in a new session and print its result as JSON",
		Long: `Call one tool in a new tool session, print the result JSON on stdout and
remove the session (container and workspace) again. A refused call prints
what to fix on stderr and exits 1; a command that fails is a normal result
with its exit_code.`,
		Example: `  podbot tools call shell_execute --args '{"command":["python3","--version"]}'
  podbot tools call podman_shell --args '{"action":"exec","command":"uname -a"}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.name = args[0]
			if !json.Valid([]byte(opts.args)) {
				return &usageError{msg: fmt.Sprintf("--args %q is not valid JSON; give an object such as '{\"path\":\".\"}'", opts.args)}
			}
			return toolsCallRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.args, "args", "{}", "tool arguments as a JSON `OBJECT`")
	addBackendFlag(cmd, opts)
	addMountFlag(cmd, opts)
	addPoolFlags(cmd, opts)
	return cmd
}

func newToolsServeCmd(f *factory) *cobra.Command {
	opts := &toolsOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the tools over MCP on stdio, backed by one sandboxed session",
		Long: `Serve the tools over the Model Context Protocol on stdin/stdout, backed by
one tool session for as long as the client stays connected. stdout carries
MCP messages only; logs go to stderr. When the client disconnects (or on
Ctrl-C) the session's container and workspace are removed.`,
		Example: `  # Claude Desktop / any MCP client: command "podbot", args ["tools", "serve"]
  npx @modelcontextprotocol/inspector --cli --method tools/list -- podbot tools serve`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return toolsServeRun(cmd.Context(), f, opts)
		},
	}
	addBackendFlag(cmd, opts)
	addMountFlag(cmd, opts)
	addPoolFlags(cmd, opts)
	return cmd
}

// openToolSession opens a session on the chosen backend from the configuration.
func openToolSession(ctx context.Context, f *factory, topts *toolsOptions) (podbot.ToolSession, error) {
	backend, err := podbot.ParseToolBackend(topts.backend)
	if err != nil {
		return nil, &usageError{msg: err.Error()}
	}
	mounts, err := parseMounts(topts.mounts)
	if err != nil {
		return nil, err
	}
	loaded, err := f.config(nil)
	if err != nil {
		return nil, err
	}
	opts := podbot.ToolSessionOptions{
		Config:     loaded.Config,
		Backend:    backend,
		Image:      f.global.image,
		Mounts:     mounts,
		RuntimeDir: f.getenv("XDG_RUNTIME_DIR"),
		Logger:     f.logger,
		OnEvent:    func(e podbot.ToolEvent) { logToolEvent(f.logger, e) },
	}
	if topts.wait < 0 || (topts.wait > 0 && topts.pool == "") {
		return nil, &usageError{msg: "--wait needs --pool and a positive duration such as 5s"}
	}
	if topts.pool != "" {
		spec, err := f.poolSpec(topts.pool)
		if err != nil {
			return nil, err
		}
		opts.Pool, opts.PoolWait = &spec, topts.wait
		opts.OnClaim = func(c podbot.ClaimReport) { logClaim(f, c) }
	}
	onKube := loaded.Config.Sandbox.Backend == config.BackendKubernetes
	if backend != podbot.ToolBackendUnsafeLocal && onKube {
		if len(mounts) > 0 {
			return nil, &usageError{msg: "--mount copies host files into a host workspace directory; a tool session on the kubernetes backend keeps its workspace in the Pod (an emptyDir), so host mounts are refused: drop --mount and write files with write_file, or use --backend engine"}
		}
		if opts.SidecarPath, err = f.sidecarPath(); err != nil {
			return nil, err
		}
		return openKubeToolSession(ctx, f, opts)
	}
	var conn *engine.Conn
	if backend == podbot.ToolBackendUnsafeLocal {
		f.logger.Warn("unsafe local tool backend: commands run on this host as this user, with no isolation")
	} else {
		if opts.SidecarPath, err = f.sidecarPath(); err != nil {
			return nil, err
		}
		if loaded.Config.Tools.WorkspaceRoot == "" {
			cache, err := f.cacheDir()
			if err != nil {
				return nil, err
			}
			opts.WorkspaceRoot = filepath.Join(cache, "tools")
		}
		if conn, err = f.engine(ctx); err != nil {
			return nil, err
		}
	}
	return podbot.NewToolSession(ctx, conn, opts)
}

// sidecarPath finds the host's podbot-sidecar binary.
func (f *factory) sidecarPath() (string, error) {
	sidecar, searched := f.findSidecar()
	if sidecar == "" {
		return "", &errdefs.FilesystemError{Op: "find sidecar", Path: strings.Join(searched, ", "), Reason: errdefs.ErrNotFound,
			Msg: "podbot-sidecar was not found; build it with `make build` (it goes next to podbot) or set PODBOT_SIDECAR_PATH"}
	}
	return sidecar, nil
}

// logToolEvent logs a session event on stderr.
func logToolEvent(l *slog.Logger, e podbot.ToolEvent) {
	attrs := []any{"session", e.Session, "backend", e.Backend}
	if e.Container != "" {
		attrs = append(attrs, "container", e.Container)
	}
	switch e.Kind {
	case sandbox.EventToolCall:
		attrs = append(attrs, "tool", e.Tool, "duration", e.Duration, "success", e.Success)
		if e.ExitCode != nil {
			attrs = append(attrs, "exit_code", *e.ExitCode)
		}
		if e.Error != "" {
			attrs = append(attrs, "error", e.Error)
		}
		l.Debug("tool call", attrs...)
	case sandbox.EventRecreatedAfterFailure, sandbox.EventUptimeLimit:
		l.Warn("tool session "+strings.ReplaceAll(e.Kind, "_", " "), attrs...)
	default:
		l.Debug("tool session "+strings.ReplaceAll(e.Kind, "_", " "), attrs...)
	}
}

// closeToolSession removes the session even when ctx was cancelled.
func closeToolSession(ctx context.Context, f *factory, s podbot.ToolSession) {
	cctx, cancel := engine.CleanupContext(ctx)
	defer cancel()
	if err := s.Close(cctx); err != nil {
		f.logger.Warn("could not remove the tool session", "error", err)
	}
}

func toolsCallRun(ctx context.Context, f *factory, opts *toolsOptions) error {
	s, err := openToolSession(ctx, f, opts)
	if err != nil {
		return err
	}
	defer closeToolSession(ctx, f, s)
	out, err := s.Call(ctx, opts.name, json.RawMessage(opts.args))
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		return err
	}
	return writeJSON(f.ios.Out, v)
}

func toolsServeRun(ctx context.Context, f *factory, opts *toolsOptions) error {
	s, err := openToolSession(ctx, f, opts)
	if err != nil {
		return err
	}
	defer closeToolSession(ctx, f, s)
	server := sandbox.NewMCPServer(s, podbot.Version)
	err = server.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(f.ios.In), Writer: nopWriteCloser{f.ios.Out}, MaxLineLength: 8 << 20})
	if ctx.Err() != nil || err == nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil
	}
	return err
}

// nopWriteCloser keeps the server from closing podbot's stdout.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
