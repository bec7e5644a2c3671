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

// launchOptions builds the library's launch options from the environment
// podbot was started with: one place for podbot run and podbot host.
func (f *factory) launchOptions(ctx context.Context, cfg config.Config, intent launchplan.Intent) (podbot.LaunchOptions, error) {
	opts := podbot.LaunchOptions{
		Config:      cfg,
		Intent:      intent,
		Environ:     f.environ,
		HostHome:    f.getenv("HOME"),
		RuntimeDir:  f.getenv("XDG_RUNTIME_DIR"),
		ConfigFiles: f.loadedFiles(),
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

// loadedFiles lists the config files read, if the configuration is loaded.
func (f *factory) loadedFiles() []string {
	if f.loaded == nil {
		return nil
	}
	return f.loaded.Files
}
