package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/podbot/podbot"
)

// networkOptions are the podbot network subcommands' flags and arguments.
type networkOptions struct {
	json, follow bool
	ref, host    string
}

func newNetworkCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "network",
		Short: "Show and change an allowlist sandbox's egress policy, read its decision log",
		Long: `An allowlist sandbox (network.mode = "allowlist") sits on an internal network
whose only way out is its egress proxy. These commands show the policy the
proxy enforces, change it on the running sandbox (the proxy reloads the
policy file; nothing restarts), and read the proxy's decision log.`,
	}
	cmd.AddCommand(newNetworkShowCmd(f, nil), newNetworkChangeCmd(f, "allow", nil), newNetworkChangeCmd(f, "deny", nil),
		newNetworkLogCmd(f, nil))
	for _, c := range cmd.Commands() {
		wrapArgs(c)
	}
	return cmd
}

func newNetworkShowCmd(f *factory, runF func(context.Context, *networkOptions) error) *cobra.Command {
	opts := &networkOptions{}
	cmd := &cobra.Command{
		Use:                   "show [--json] SANDBOX",
		DisableFlagsInUseLine: true,
		Short:                 "Print the egress policy in force",
		Long:                  "Print the egress policy in force for a sandbox: every allow rule with where it came from, the live denies and the network.resolve pins.",
		Example:               "  podbot network show podbot-claude-1a2b3c4d5e6f\n  podbot network show --json NAME | jq '.policy.Rules'",
		Args:                  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ref = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			if onKube, err := f.onKubernetes(); err != nil || onKube {
				if err != nil {
					return err
				}
				return networkOnKubernetes(cmd.Context(), f, "show", opts)
			}
			conn, err := f.engine(cmd.Context())
			if err != nil {
				return err
			}
			np, err := podbot.NetworkShow(cmd.Context(), conn, opts.ref)
			if err != nil {
				return err
			}
			return printPolicy(f.ios.Out, np, opts.json)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}

func newNetworkChangeCmd(f *factory, verb string, runF func(context.Context, *networkOptions) error) *cobra.Command {
	opts := &networkOptions{}
	short := "Allow a host on a running sandbox"
	if verb == "deny" {
		short = "Deny a host on a running sandbox (checked before every allow rule)"
	}
	cmd := &cobra.Command{
		Use:                   verb + " SANDBOX HOST",
		DisableFlagsInUseLine: true,
		Short:                 short,
		Long: short + `. HOST is host, host:port, *.domain or *.domain:port (no port
means 443 and 80). The policy file is rewritten atomically and the proxy
reloads it: the running sandbox gets the change without a restart.`,
		Example: fmt.Sprintf("  podbot network %s NAME api.example.com\n  podbot network %s NAME '*.example.org:8443'", verb, verb),
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ref, opts.host = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			if onKube, err := f.onKubernetes(); err != nil || onKube {
				if err != nil {
					return err
				}
				return networkOnKubernetes(cmd.Context(), f, verb, opts)
			}
			conn, err := f.engine(cmd.Context())
			if err != nil {
				return err
			}
			change := podbot.NetworkAllow
			if verb == "deny" {
				change = podbot.NetworkDeny
			}
			np, err := change(cmd.Context(), conn, opts.ref, opts.host)
			if err != nil {
				return err
			}
			if np.InForce {
				f.logger.Info("egress policy changed; the proxy has it in force", "sandbox", np.Sandbox, verb, opts.host)
			} else {
				f.logger.Info("egress policy changed; the proxy is not running and loads it when the sandbox starts", "sandbox", np.Sandbox, verb, opts.host)
			}
			return nil
		},
	}
	return cmd
}

func newNetworkLogCmd(f *factory, runF func(context.Context, *networkOptions) error) *cobra.Command {
	opts := &networkOptions{}
	cmd := &cobra.Command{
		Use:                   "log [--follow] [--json] SANDBOX",
		DisableFlagsInUseLine: true,
		Short:                 "Print the egress proxy's decision log",
		Long:                  "Print the egress proxy's decisions for a sandbox, one line per connection: time, host, port, decision, rule, bytes up and down. --json prints the log's JSON lines as they are.",
		Example:               "  podbot network log NAME\n  podbot network log --follow --json NAME | jq .",
		Args:                  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ref = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			if onKube, err := f.onKubernetes(); err != nil || onKube {
				if err != nil {
					return err
				}
				return networkOnKubernetes(cmd.Context(), f, "log", opts)
			}
			conn, err := f.engine(cmd.Context())
			if err != nil {
				return err
			}
			return podbot.NetworkLog(cmd.Context(), conn, opts.ref, podbot.NetworkLogOptions{Follow: opts.follow}, logPrinter(f.ios.Out, opts.json))
		},
	}
	cmd.Flags().BoolVarP(&opts.follow, "follow", "f", false, "keep printing new decisions")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the JSON lines")
	return cmd
}

// logPrinter prints decision log lines to out: as they are with asJSON,
// else as logText renders them.
func logPrinter(out io.Writer, asJSON bool) func(line []byte) error {
	return func(line []byte) error {
		if asJSON {
			_, err := fmt.Fprintf(out, "%s\n", line)
			return err
		}
		_, err := fmt.Fprintln(out, logText(line))
		return err
	}
}

// logText renders one decision log line as text; a line that is not a
// JSON object is quoted as it is.
func logText(line []byte) string {
	var m map[string]any
	if json.Unmarshal(line, &m) != nil {
		return fmt.Sprintf("%q", line)
	}
	get := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := m[k]; ok && v != nil {
				return fmt.Sprint(v)
			}
		}
		return "-"
	}
	return fmt.Sprintf("%s %s %s:%s rule=%s up=%s down=%s %s", get("time", "ts"), get("decision"), get("host"), get("port"),
		get("rule"), get("bytes_up", "up"), get("bytes_down", "down"), get("reason"))
}

func printPolicy(w io.Writer, np podbot.NetworkPolicy, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(np)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sandbox %s (mode %s, proxy %s)\npolicy file %s\n", np.Sandbox, np.Mode, np.Proxy, np.PolicyFile)
	b.WriteString("allow:\n")
	for _, r := range np.Policy.Rules {
		fmt.Fprintf(&b, "  %-40s %s\n", r.String(), r.Source)
	}
	if len(np.Policy.Deny) > 0 {
		b.WriteString("deny:\n")
		for _, r := range np.Policy.Deny {
			fmt.Fprintf(&b, "  %-40s %s\n", r.String(), r.Source)
		}
	}
	if len(np.Policy.Resolve) > 0 {
		b.WriteString("resolve:\n")
		for h, a := range np.Policy.Resolve {
			fmt.Fprintf(&b, "  %s=%s\n", h, a)
		}
	}
	if len(np.Secrets) > 0 {
		b.WriteString("secrets (credential vault; values stay in the proxy):\n")
		for _, s := range np.Secrets {
			env := ""
			if s.Env != "" {
				env = " (placeholder in $" + s.Env + ")"
			}
			fmt.Fprintf(&b, "  %-20s %s%s\n", s.Name, strings.Join(s.Hosts, ", "), env)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
