package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/workspace"
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
	case isLocalRepo(repo):
		m["workspace.source"] = config.SourceLocalClone
		m["workspace.host_path"] = ""
	case repo != "":
		m["workspace.source"] = config.SourceGitHubClone
		m["workspace.host_path"] = ""
	}
}

// isLocalRepo reports whether a --repo value names a local path rather than
// a GitHub OWNER/NAME: it starts with '/', '.' or '~', or it is an existing
// directory that is not a valid OWNER/NAME.
func isLocalRepo(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '/' || s[0] == '.' || s[0] == '~' {
		return true
	}
	if _, err := workspace.ParseRepo(s); err != nil {
		if fi, err := os.Stat(s); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

// localCloneFlags are --base and --dirty, which go with --repo PATH.
type localCloneFlags struct {
	base  string
	dirty bool
	depth int
}

func (l *localCloneFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&l.base, "base", "", "with --repo PATH: start the sandbox's branch at `REF` instead of HEAD")
	fl.BoolVar(&l.dirty, "dirty", false, "with --repo PATH: carry the host's uncommitted changes in as one commit")
	fl.IntVar(&l.depth, "depth", 0, "with --repo PATH: copy only the last `N` commits of history (default: all)")
}

// options resolves --repo PATH (made absolute; a leading ~/ is the home
// directory) into library options; nil when repo is not a local path.
func (l *localCloneFlags) options(repo, home string) (*podbot.LocalCloneOptions, error) {
	if l.depth < 0 {
		return nil, &usageError{msg: fmt.Sprintf("--depth %d: expected a positive number of commits", l.depth)}
	}
	if !isLocalRepo(repo) {
		if l.base != "" || l.dirty || l.depth != 0 {
			return nil, &usageError{msg: "--base, --dirty and --depth go with --repo PATH (a local repository)"}
		}
		return nil, nil
	}
	if repo == "~" || strings.HasPrefix(repo, "~/") {
		if home == "" {
			return nil, &usageError{msg: "--repo " + repo + ": HOME is not set; give an absolute path"}
		}
		repo = filepath.Join(home, strings.TrimPrefix(repo, "~"))
	}
	abs, err := filepath.Abs(repo)
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "resolve", Path: repo, Err: err}
	}
	return &podbot.LocalCloneOptions{Path: abs, Base: l.base, Dirty: l.dirty, Depth: l.depth}, nil
}
