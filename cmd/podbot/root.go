package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
)

// globalOptions are the flags every command accepts, before or after the
// subcommand name.
type globalOptions struct {
	configPath   string
	engineSocket string
	image        string
	backend      string
	logLevel     string
	logFormat    string
	quiet        bool
}

// Main runs podbot with args (without the program name) and returns the
// process exit status. It is main's only call, and the entry point tests use.
func Main(ctx context.Context, ios *ioStreams, args []string, environ []string) int {
	f := newFactory(ios, environ)
	f.handOver.args = args
	return execute(ctx, f, args)
}

// execute runs the command tree for f with args and returns the exit status.
func execute(ctx context.Context, f *factory, args []string) int {
	ios := f.ios
	root := newRootCmd(f)
	root.SetArgs(args)
	root.SetIn(ios.In)
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	err := root.ExecuteContext(ctx)
	f.close()
	code := exitCode(err)
	if err != nil && err.Error() != "" && !isExitStatus(err) {
		fmt.Fprintf(ios.ErrOut, "podbot: %s\n", err)
		if code == exitUsage {
			fmt.Fprintln(ios.ErrOut, "Run 'podbot --help' for usage.")
		}
	}
	return code
}

func newRootCmd(f *factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "podbot",
		Short: "Run AI coding agents in hardened Podman or Docker sandboxes",
		Long: `podbot runs AI coding agents (Claude Code, Codex, ACP agents, custom commands)
inside hardened Podman or Docker containers, and gives host programs a
sandboxed shell and file tools over MCP.

Only podbot, on the host, ever holds the engine socket.`,
		Example: `  podbot doctor
  podbot image build --bootstrap
  podbot --engine-socket unix:///run/podman/podman.sock ps --json`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.setupLogging(cmd.Flags().Changed("quiet")); err != nil {
				return err
			}
			if err := f.checkBackend(cmd); err != nil {
				return err
			}
			return f.maybeHandOver(cmd)
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &usageError{msg: err.Error()}
	})
	g := &f.global
	pf := root.PersistentFlags()
	pf.StringVarP(&g.configPath, "config", "c", "", "config file `PATH` (default: $PODBOT_CONFIG_PATH, then the XDG and /etc locations)")
	pf.StringVar(&g.engineSocket, "engine-socket", "", "engine endpoint `URI` (unix://, tcp://, http(s)://, npipe:// or a socket path)")
	pf.StringVar(&g.image, "image", "", "sandbox image `REF`")
	pf.StringVar(&g.backend, "backend", "", "where sandboxes run: engine or kubernetes (default: sandbox.backend)")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	pf.StringVar(&g.logFormat, "log-format", "text", "log format on stderr: text or json")
	pf.BoolVarP(&g.quiet, "quiet", "q", false, "only log errors")

	root.AddCommand(
		newVersionCmd(f),
		newCompletionCmd(),
		newConfigCmd(f),
		newDoctorCmd(f),
		newImageCmd(f),
		newCreateCmd(f, nil),
		newExecCmd(f, nil),
		newRunCmd(f, nil),
		newPsCmd(f, nil),
		newDiffCmd(f),
		newLogCmd(f),
		newFetchCmd(f),
		newApplyCmd(f),
		newStartCmd(f, nil),
		newStopCmd(f, nil),
		newRmCmd(f, nil),
		newLogsCmd(f, nil),
		newPruneCmd(f, nil),
		newTokenDaemonCmd(f, nil),
		newHostCmd(f, nil),
		newToolsCmd(f),
		newNetworkCmd(f),
		newPoolCmd(f),
	)
	for _, c := range root.Commands() {
		wrapArgs(c)
	}
	return root
}

// wrapArgs makes positional-argument errors usage errors (exit 2).
func wrapArgs(c *cobra.Command) {
	if c.Args != nil {
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return &usageError{msg: err.Error()}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}

// setupLogging installs the stderr logger from --log-level, --log-format and --quiet.
func (f *factory) setupLogging(quiet bool) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.global.logLevel)); err != nil {
		return &usageError{msg: fmt.Sprintf("--log-level %q: expected debug, info, warn or error", f.global.logLevel)}
	}
	if quiet || f.global.quiet {
		level = slog.LevelError
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch strings.ToLower(f.global.logFormat) {
	case "text":
		h = slog.NewTextHandler(f.ios.ErrOut, opts)
	case "json":
		h = slog.NewJSONHandler(f.ios.ErrOut, opts)
	default:
		return &usageError{msg: fmt.Sprintf("--log-format %q: expected text or json", f.global.logFormat)}
	}
	f.logger = slog.New(f.wrapHandler(h))
	return nil
}

func isExitStatus(err error) bool {
	var s *silentError
	return errors.As(err, &s) || isProcessExit(err)
}
