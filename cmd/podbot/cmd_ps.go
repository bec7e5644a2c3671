package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/localclone"
	"github.com/podbot/podbot/termsafe"
)

// psOptions are podbot ps's flags.
type psOptions struct {
	all, size, json bool
}

func newPsCmd(f *factory, runF func(context.Context, *psOptions) error) *cobra.Command {
	opts := &psOptions{}
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List podbot's containers",
		Long: `List the containers podbot created (label podbot.managed=true), newest first,
in one engine call. Other containers on the engine are not shown. When a
sandbox was made from a local repository (--repo PATH), REPO and BRANCH
show that repository and the sandbox's branch (podbot/<name>).`,
		Example: `  podbot ps
  podbot ps -a --size
  podbot ps -a --json | jq -r '.[].name'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return psRun(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&opts.all, "all", "a", false, "include stopped containers")
	fl.BoolVar(&opts.size, "size", false, "show the writable layer's size (slower)")
	fl.BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}

func psRun(ctx context.Context, f *factory, opts *psOptions) error {
	rows, err := psRows(ctx, f, opts)
	if err != nil {
		return err
	}
	if opts.json {
		return writeJSON(f.ios.Out, rows)
	}
	tw := tabwriter.NewWriter(f.ios.Out, 0, 4, 2, ' ', 0)
	head := "NAME\tID\tIMAGE\tSTATUS\tINTENT\tSESSION"
	if opts.size {
		head += "\tSIZE"
	}
	clones := false
	for _, c := range rows {
		clones = clones || c.Labels[localclone.LabelRepo] != ""
	}
	if clones {
		head += "\tREPO\tBRANCH"
	}
	fmt.Fprintln(tw, head)
	for _, c := range rows {
		line := strings.Join([]string{c.Name, shortID(c.ID), c.Image, c.Status, c.Labels["podbot.intent"], c.Labels["podbot.session"]}, "\t")
		if opts.size {
			line += "\t" + humanBytes(c.SizeRw)
		}
		if clones {
			line += "\t" + orDash(termsafe.Line(c.Labels[localclone.LabelRepo])) + "\t" + orDash(termsafe.Line(c.Labels[localclone.LabelBranch]))
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// humanBytes formats a byte count with a binary unit.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// orDash is s, or "-" when empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// psRows lists podbot's sandboxes on the configured backend.
func psRows(ctx context.Context, f *factory, opts *psOptions) ([]podbot.Container, error) {
	onKube, err := f.onKubernetes()
	if err != nil {
		return nil, err
	}
	if !onKube {
		conn, err := f.engine(ctx)
		if err != nil {
			return nil, err
		}
		return podbot.List(ctx, conn, podbot.ListOptions{All: opts.all, Size: opts.size})
	}
	if opts.size {
		return nil, &usageError{msg: "--size: the kubernetes backend has no writable-layer sizes; drop --size"}
	}
	return psOnKubernetes(ctx, f, opts)
}
