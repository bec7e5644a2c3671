package main

import (
	"path/filepath"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
)

// absWorkspace makes a --workspace path absolute (relative to the current
// directory), so it is the same path in the configuration and the launch.
func absWorkspace(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", &errdefs.FilesystemError{Op: "resolve", Path: p, Err: err}
	}
	return abs, nil
}

// workspaceOverrides maps --workspace and --repo onto the workspace keys,
// so the configuration is validated once, with every flag applied: a config
// file that selects host_mount without a host_path is complete once
// --workspace names one, and --repo selects github_clone over a file's
// host_mount.
func workspaceOverrides(m map[string]string, workspace, repo string) {
	switch {
	case workspace != "":
		m["workspace.source"] = config.SourceHostMount
		m["workspace.host_path"] = workspace
	case repo != "":
		m["workspace.source"] = config.SourceGitHubClone
		m["workspace.host_path"] = ""
	}
}
