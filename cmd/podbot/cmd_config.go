package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/podbot/podbot"
)

func newConfigCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Inspect podbot's configuration",
	}
	var asJSON bool
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration and where each value came from",
		Long: `Print every configuration key with its effective value and its source:
"default", the config file's path, the environment variable, or the flag.
Secret values are redacted.

Then the egress policy an agent sandbox gets (podbot run, host, create):
the effective mode and every rule, in the order they are checked, with its
source (the preset that brought it, or network.allow) and where that was
set (the config file and line, the environment variable, or "default"),
then the network.resolve pins. --allow-host rules are per launch and are
not shown. --json prints the same under "egress".`,
		Example: `  podbot config show
  PODBOT_SANDBOX_PRIVILEGED=true podbot config show --json
  PODBOT_NETWORK_ALLOW=api.example.com podbot config show`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			loaded, err := f.config(nil)
			if err != nil {
				return err
			}
			entries := loaded.Effective()
			eg, err := podbot.EgressEffective(loaded)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(f.ios.Out, map[string]any{"files": loaded.Files, "values": entries, "egress": eg})
			}
			tw := tabwriter.NewWriter(f.ios.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Key, e.Text, e.Source)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			return writeEgress(f.ios.Out, eg)
		},
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(show)
	return cmd
}

// writeEgress prints the effective egress policy as config show's text.
func writeEgress(w io.Writer, eg podbot.EffectiveEgress) error {
	fmt.Fprintf(w, "\negress mode %s (network.mode from %s)\n", eg.Mode, eg.ModeOrigin)
	switch {
	case eg.Mode == "none":
		fmt.Fprintln(w, "agent sandboxes have no network")
	case eg.Mode == "open":
		fmt.Fprintln(w, "agent sandboxes have the engine's default network with no egress control")
	case len(eg.Rules) == 0:
		fmt.Fprintln(w, "no rule: agent sandboxes may reach no host")
	default:
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RULE\tSOURCE\tORIGIN")
		for _, r := range eg.Rules {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Rule, r.Source, r.Origin)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(eg.Resolve) > 0 {
		fmt.Fprintln(w, "\npinned names (network.resolve):")
		for _, p := range eg.Resolve {
			fmt.Fprintf(w, "  %s = %s\n", p.Host, p.Address)
		}
	}
	if eg.UpstreamCA != "" {
		fmt.Fprintf(w, "\nupstream CA bundle (network.upstream_ca): %s\n", eg.UpstreamCA)
	}
	return nil
}
