package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
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
Secret values are redacted.`,
		Example: `  podbot config show
  PODBOT_SANDBOX_PRIVILEGED=true podbot config show --json`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			loaded, err := f.config(nil)
			if err != nil {
				return err
			}
			entries := loaded.Effective()
			if asJSON {
				return writeJSON(f.ios.Out, map[string]any{"files": loaded.Files, "values": entries})
			}
			tw := tabwriter.NewWriter(f.ios.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Key, e.Text, e.Source)
			}
			return tw.Flush()
		},
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(show)
	return cmd
}
