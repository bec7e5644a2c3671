package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/github"
)

// tokenDaemonOptions are podbot token-daemon's flags.
type tokenDaemonOptions struct {
	container     string
	all           bool
	checkInterval time.Duration
	listInterval  time.Duration
}

func newTokenDaemonCmd(f *factory, runF func(context.Context, *tokenDaemonOptions) error) *cobra.Command {
	opts := &tokenDaemonOptions{}
	cmd := &cobra.Command{
		Use:   "token-daemon (NAME|ID | --container NAME|ID | --all)",
		Short: "Keep GitHub App tokens fresh for podbot containers",
		Long: `Keep the GitHub App installation token of podbot containers fresh.

For each container it writes $XDG_RUNTIME_DIR/podbot/<container name>/ghapp_token
(directory 0700, file 0600, replaced atomically), which the container sees
read-only at /run/secrets/ghapp_token and git reads through the image's askpass
helper. A token is replaced github.token_refresh_buffer before it expires;
failures are retried with backoff while the old token is still valid. When a
container stops or is removed its directory is removed at once: the daemon
follows the engine's event stream, and checks every --check-interval only
while that stream is unavailable (reconnecting with backoff meanwhile).

A container given as the argument or with --container is served alone, until
it stops or is removed. --all serves every
podbot container launched with a token (label podbot.github_token=true),
including ones started later, until interrupted; run it as a systemd user
service (contrib/systemd/podbot-token-daemon.service). The GitHub App comes
from the configuration (github.app_id, github.installation_id,
github.private_key_path, github.api_url). Tokens never appear in logs or argv.

With sandbox.backend = "kubernetes" (--backend kubernetes) it serves sandbox
Pods instead: those made by podbot create --repo OWNER/NAME with a GitHub App
(label podbot.github_token=true; their repository and clone origin are in
the Pod's annotations). Each token is written by an exec into the Pod's
token container, nothing on the host. It follows the namespace's podbot
Pods over one watch of the API server: NAME's daemon exits (status 0) as
soon as its Pod is deleted, stops running or is replaced, and --all serves
a new Pod as soon as it runs; while the watch is unavailable it checks
every --check-interval and lists every --list-interval.`,
		Example: `  podbot token-daemon --all
  podbot token-daemon podbot-claude-3f2a9c1d0b7e
  podbot token-daemon --container podbot-claude-3f2a9c1d0b7e
  podbot --backend kubernetes token-daemon --all
  systemctl --user enable --now podbot-token-daemon.service`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if opts.container != "" && opts.container != args[0] {
					return &usageError{msg: "name the container once: as the argument or with --container, not both"}
				}
				opts.container = args[0]
			}
			if (opts.container == "") == !opts.all {
				return &usageError{msg: "give either a container (NAME|ID, or --container NAME|ID) or --all"}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return tokenDaemonRun(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.container, "container", "", "serve the one container with this `NAME|ID`")
	fl.BoolVar(&opts.all, "all", false, "serve every podbot container that needs a token")
	fl.DurationVar(&opts.checkInterval, "check-interval", 0, "how often to check a container while the engine's event stream is unavailable (default 30s)")
	fl.DurationVar(&opts.listInterval, "list-interval", 0, "with --all, how often to look for new containers (default 30s)")
	return cmd
}

func tokenDaemonRun(ctx context.Context, f *factory, opts *tokenDaemonOptions) error {
	loaded, err := f.config(nil)
	if err != nil {
		return err
	}
	g := loaded.Config.GitHub
	if !g.Configured() {
		return &errdefs.ConfigError{Key: "github.app_id", Reason: errdefs.ErrMissingRequired,
			Msg: "no GitHub App is configured; set github.app_id, github.installation_id and github.private_key_path"}
	}
	app, err := github.NewApp(podbot.GitHubAppConfig(g))
	if err != nil {
		return err
	}
	lib := podbot.TokenDaemonOptions{
		Container:     opts.container,
		All:           opts.all,
		Source:        app,
		RefreshBuffer: g.TokenRefreshBuffer,
		CheckInterval: opts.checkInterval,
		ListInterval:  opts.listInterval,
		Logger:        f.logger,
		Redactor:      f.redactor,
	}
	if loaded.Config.Sandbox.Backend == config.BackendKubernetes {
		return tokenDaemonOnKubernetes(ctx, f, opts, lib)
	}
	lib.RuntimeDir = f.getenv("XDG_RUNTIME_DIR")
	conn, err := f.engine(ctx)
	if err != nil {
		return err
	}
	return podbot.RunTokenDaemon(ctx, conn, lib)
}
