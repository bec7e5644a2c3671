package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/podbot/podbot/sidecarsock"
	"github.com/podbot/podbot/tools"
)

// maxFrameBytes bounds one inbound MCP message; tool arguments are far smaller.
const maxFrameBytes = 4 << 20

// maxProcs bounds --gomaxprocs.
const maxProcs = 1024

// serveOptions are the flags of "serve".
type serveOptions struct {
	root       string
	tmp        string
	structured bool
	// procs, when positive, is the sidecar's GOMAXPROCS. Go never picks
	// fewer than 2 from a cgroup CPU limit; in a one-CPU sandbox a second
	// P only adds a thread wake-up to every hand-off between goroutines.
	procs int
	// batch runs the sidecar, and so the commands it starts, under
	// SCHED_BATCH (see serve).
	batch bool
	// listen, when set, is the sandbox's link directory: the sidecar
	// serves MCP on a unix socket there instead of stdio (see serveSocket).
	listen string
}

func parseServe(args []string, stderr io.Writer) (serveOptions, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts := serveOptions{structured: true}
	fs.StringVar(&opts.root, "root", tools.WorkspaceName, "workspace directory the tools operate on")
	fs.StringVar(&opts.tmp, "tmp", os.TempDir(), "writable directory outside the workspace for staging")
	fs.BoolVar(&opts.structured, "structured", true, "also return each result as structured content (podbot's host reads only the JSON text and passes --structured=false)")
	fs.BoolVar(&opts.batch, "batch", false, "run the sidecar and the commands it starts under SCHED_BATCH (Linux): the sidecar's own wake-ups then never preempt a command on its CPU (podbot passes it)")
	fs.IntVar(&opts.procs, "gomaxprocs", 0, "run the sidecar's Go code on at most this many CPUs at once; 0 keeps Go's default (podbot passes the sandbox's CPU limit, rounded up); commands are not affected")
	fs.StringVar(&opts.listen, "listen", "", "serve on a unix socket in this link directory instead of stdio, to hosts that prove they hold the key podbot left there (podbot passes it through init)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return opts, err
		}
		return opts, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("%w: serve takes no positional arguments (got %q)", errUsage, fs.Arg(0))
	}
	if opts.procs < 0 || opts.procs > maxProcs {
		return opts, fmt.Errorf("%w: --gomaxprocs %d is out of range; give 0 (Go's default) to %d", errUsage, opts.procs, maxProcs)
	}
	return opts, nil
}

// serve runs the MCP server on stdin/stdout until the peer closes the
// stream or ctx ends. Commands inherit the sidecar's environment, which
// podbot set when it created the container.
//
// With opts.batch the sidecar's threads run under SCHED_BATCH, and so do
// the commands they start (the policy is inherited; a command can go back
// with chrt -o 0). A batch thread that wakes never preempts the one
// running: in a one-CPU sandbox, the sidecar's reply to a finished vfork,
// its monitor thread and the wake-ups for a command's closing pipes then
// wait until the command stops running, instead of each switching the CPU
// away from it and back. A SCHED_BATCH refused (by a seccomp profile, say)
// leaves a line on stderr and the sidecar serving as it is.
func serve(ctx context.Context, opts serveOptions, stderr io.Writer) error {
	if opts.procs > 0 {
		runtime.GOMAXPROCS(opts.procs)
	}
	if opts.batch {
		if err := setBatch(); err != nil {
			fmt.Fprintf(stderr, "podbot-sidecar: serving without SCHED_BATCH: %v\n", err)
		}
	}
	var key []byte
	if opts.listen != "" {
		// Before the key is read: no process of the sandbox user may
		// then read this one's memory or descriptors through /proc or ptrace.
		if err := undumpable(); err != nil {
			return err
		}
		var err error
		if key, err = sidecarsock.TakeKey(opts.listen); err != nil {
			return err
		}
	}
	ws, err := tools.NewWorkspace(opts.root, tools.WithEnv(os.Environ()), tools.WithTempDir(opts.tmp))
	if err != nil {
		return err
	}
	defer ws.Close()
	server := newServer(ws, opts)
	if opts.listen != "" {
		return serveSocket(ctx, server, opts.listen, key, stderr)
	}
	// A polled stdin is closed promptly, so each request can be decoded on
	// the SDK's own reading goroutine.
	stdin, polled := pollable(os.Stdin)
	transport := &tools.LineTransport{Reader: stdin, Writer: nopCloser{os.Stdout}, MaxFrameBytes: maxFrameBytes, DirectRead: polled}
	err = server.Run(ctx, transport)
	if ctx.Err() != nil {
		return nil // asked to stop
	}
	return err
}

// newServer is the MCP server serve runs over ws, as opts ask.
func newServer(ws *tools.Workspace, opts serveOptions) *mcp.Server {
	var mcpOpts []tools.MCPOption
	if !opts.structured {
		mcpOpts = append(mcpOpts, tools.TextResults())
	}
	return tools.NewMCPServer(ws, version, mcpOpts...)
}

// nopCloser keeps stdout open when the transport closes, as the standard
// stdio transport does.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
