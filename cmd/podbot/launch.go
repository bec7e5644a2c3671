package main

import (
	"context"
	"fmt"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/creds"
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
