package podbot

import (
	"errors"
	"testing"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// TestLaunchRequestLocalClone: --repo PATH (or workspace.repo_path) makes
// a local_clone workspace under workspace.base_dir named for the
// directory, with no mount; local_clone without a path is refused.
func TestLaunchRequestLocalClone(t *testing.T) {
	_, conn := newTokenEngine(t)
	cfg := config.Config{Image: "img"}
	cfg.Agent.Kind = "claude"
	cfg.Workspace.BaseDir = "/work"
	req, mount, err := launchRequest(conn, LaunchOptions{Config: cfg, Intent: launchplan.IntentInteractive,
		LocalClone: &LocalCloneOptions{Path: "/home/me/src/my app"}})
	if err != nil || mount != nil {
		t.Fatalf("launchRequest: %v, mount %v", err, mount)
	}
	if w := req.Workspace; w.Strategy != launchplan.WorkspaceLocalClone || w.ContainerPath != "/work/my_app" || w.HostPath != "" {
		t.Errorf("workspace %+v", w)
	}
	plan, err := launchplan.Normalize(req)
	if err != nil {
		t.Fatal(err)
	}
	c, hc, _ := plan.Render()
	if plan.WorkingDir != "/work/my_app" || c.WorkingDir != "" || len(hc.Mounts) != 0 || len(hc.Binds) != 0 {
		t.Errorf("plan workdir %q, container workdir %q, mounts %v %v", plan.WorkingDir, c.WorkingDir, hc.Mounts, hc.Binds)
	}

	cfg.Workspace.Source = config.SourceLocalClone
	cfg.Workspace.RepoPath = "/home/me/src/app"
	req, _, err = launchRequest(conn, LaunchOptions{Config: cfg, Intent: launchplan.IntentInteractive})
	if err != nil || req.Workspace.ContainerPath != "/work/app" {
		t.Errorf("workspace.repo_path: %+v, %v", req.Workspace, err)
	}
	cfg.Workspace.RepoPath = ""
	if _, _, err := launchRequest(conn, LaunchOptions{Config: cfg, Intent: launchplan.IntentInteractive}); !errors.Is(err, errdefs.ErrMissingRequired) {
		t.Errorf("local_clone without a path: %v", err)
	}
}
