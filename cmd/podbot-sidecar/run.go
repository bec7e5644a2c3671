package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"

	"github.com/podbot/podbot/gitcred"
)

const usage = `usage: podbot-sidecar <command> [flags]

commands:
  serve [--root DIR] [--tmp DIR]   serve the podbot tools over MCP on stdio
  init [serve --listen DIR [FLAGS]]
                                   run as PID 1: stay alive, reap zombies;
                                   with serve, also start the tool server
                                   on the socket in DIR (once)
  egress --listen ADDR --policy FILE --log FILE [--upstream-ca FILE]
         [--secrets FILE --ca-cert FILE --ca-key FILE]
                                   serve the egress proxy; reload the policy
                                   and secrets files when they change
  version                          print the version
  netlock [--block ADDR]...        delete the default route and block ADDRs
                                   (needs CAP_NET_ADMIN; run by podbot in a
                                   helper sharing a sandbox's network)

As git's askpass program (GIT_ASKPASS), podbot-sidecar takes git's prompt as
its only argument and answers it with the GitHub token only for the clone
origin in /run/secrets/git_origin.
`

// errUsage marks a command line that could not be understood.
var errUsage = errors.New("usage")

// run executes one sidecar command and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "podbot-sidecar: %v\n%s", err, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "podbot-sidecar: %v\n", err)
		return 1
	}
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: a command is required", errUsage)
	}
	if len(args) == 1 && gitcred.LooksLikePrompt(args[0]) {
		return askpass(args[0], gitcred.OriginPath, gitcred.TokenPath, stdout)
	}
	switch args[0] {
	case "serve":
		opts, err := parseServe(args[1:], stderr)
		if err != nil {
			return err
		}
		return serve(ctx, opts, stderr)
	case "egress":
		opts, err := parseEgress(args[1:], stderr)
		if err != nil {
			return err
		}
		return runEgress(ctx, opts, stderr)
	case "init":
		if len(args) == 1 {
			return initLoop(ctx, nil)
		}
		if args[1] != "serve" {
			return fmt.Errorf("%w: init takes nothing, or serve and its flags", errUsage)
		}
		opts, err := parseServe(args[2:], stderr)
		if err != nil {
			return err
		}
		if opts.listen == "" {
			return fmt.Errorf("%w: init serve needs --listen DIR (a served stdio would be the container's)", errUsage)
		}
		return initLoop(ctx, args[1:])
	case "netlock":
		blocked, err := parseNetlock(args[1:], stderr)
		if err != nil {
			return err
		}
		return netlock(blocked)
	case "version", "--version":
		_, err := fmt.Fprintln(stdout, version)
		return err
	case "help", "-h", "--help":
		return flag.ErrHelp
	default:
		return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
	}
}

// parseNetlock reads netlock's repeated --block ADDR flags.
func parseNetlock(args []string, stderr io.Writer) ([]netip.Addr, error) {
	fs := flag.NewFlagSet("netlock", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var blocked []netip.Addr
	fs.Func("block", "an IPv4 address the sandbox must not reach (repeatable)", func(s string) error {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return fmt.Errorf("%q is not an IPv4 address", s)
		}
		blocked = append(blocked, a)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: netlock: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: netlock takes no arguments", errUsage)
	}
	return blocked, nil
}
