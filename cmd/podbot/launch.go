package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/github"
	"github.com/podbot/podbot/launchplan"
)

// launchOptions builds the library's launch options from the loaded
// configuration and the environment podbot was started with: one place for
// podbot run and podbot host. The config file paths Load searched go along, so
// Launch can refuse a workspace that holds one.
func (f *factory) launchOptions(ctx context.Context, loaded *config.Loaded, intent launchplan.Intent) (podbot.LaunchOptions, error) {
	cfg := loaded.Config
	opts := podbot.LaunchOptions{
		Config:      cfg,
		ConfigFiles: loaded.Searched,
		Intent:      intent,
		Environ:     f.environ,
		HostHome:    f.getenv("HOME"),
		RuntimeDir:  f.getenv("XDG_RUNTIME_DIR"),
		GitConfig:   creds.HostGitConfig(ctx),
		Logger:      f.logger,
		Redactor:    f.redactor,
		Progress: func(step, detail string) {
			if !f.global.quiet {
				fmt.Fprintf(f.ios.ErrOut, "podbot: %s: %s\n", step, f.redactor.Redact(detail))
			}
		},
	}
	opts.SidecarPath, _ = f.findSidecar()
	if cfg.GitHub.Configured() {
		app, err := github.NewApp(podbot.GitHubAppConfig(cfg.GitHub))
		if err != nil {
			return opts, err
		}
		opts.TokenSource = app
	}
	return opts, nil
}

// egressFlags are the egress flags of podbot run, host and create.
type egressFlags struct {
	// network is --network: allowlist, none or open (network.mode).
	network string
	// allowHosts are the --allow-host rules, added to network.allow for
	// this launch.
	allowHosts []string
}

// egressHelp is the help text shared by the commands with egress flags.
const egressHelp = `Egress: the sandbox may reach only the hosts of network.allow and of the
presets network.presets selects (agent: the agent's API and sign-in hosts;
github: the hosts of github.api_url and github.clone_base_url; packages:
npm, PyPI, the Go module proxy, crates.io), as network.mode = "allowlist"
(the default) says; podbot config show lists every rule and its source.
--allow-host HOST adds a rule for this launch (host, host:port, *.domain
or *.domain:port; no port means 443 and 80; repeat it for more).
--network none takes the network away; --network open keeps the engine's
default network with no egress control, and podbot warns.`

// registerAllowHost adds --allow-host to fl.
func (e *egressFlags) registerAllowHost(fl *pflag.FlagSet) {
	fl.StringArrayVar(&e.allowHosts, "allow-host", nil, "allow egress to `HOST` (host, host:port, *.domain[:port]) for this launch; repeatable")
}

// register adds --network MODE and --allow-host to fl.
func (e *egressFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&e.network, "network", "", "egress `MODE`: allowlist, none or open (default: network.mode)")
	e.registerAllowHost(fl)
}

// check refuses a malformed --allow-host before anything is launched.
func (e *egressFlags) check() error {
	for _, h := range e.allowHosts {
		if _, err := egress.ParseRule(h); err != nil {
			return &usageError{msg: "--allow-host: " + err.Error()}
		}
	}
	return nil
}

// overrides adds the configuration keys the egress flags set to m.
func (e *egressFlags) overrides(m map[string]string) {
	if e.network != "" {
		m["network.mode"] = e.network
	}
}

// warnEgress logs the warnings the egress settings call for (network.mode
// = "open") on stderr.
func (f *factory) warnEgress(loaded *config.Loaded) {
	for _, w := range loaded.EgressWarnings() {
		f.logger.Warn(w)
	}
}
