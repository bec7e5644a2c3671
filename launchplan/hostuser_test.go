package launchplan

import (
	"errors"
	"slices"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func hostMountRequest(owner *HostOwner) Request {
	req := baseRequest(IntentInteractive, KindClaude, "")
	req.Workspace = Workspace{Strategy: WorkspaceHostMount, HostPath: "/home/u/p", Owner: owner}
	return req
}

// The attacker's way to the host through a host mount is root: a root
// process without a user namespace writes root-owned files, setuid bits
// included, into the user's directory. Each way to get root is refused.
func TestHostMountAgentNeverRoot(t *testing.T) {
	tests := []struct {
		name     string
		owner    *HostOwner
		user     string
		wantUser string
		key      string
	}{
		{name: "runs as the directory's owner", owner: &HostOwner{UID: 1000, GID: 100}, wantUser: "1000:100"},
		{name: "an explicit unprivileged user", owner: &HostOwner{UID: 1000, GID: 100}, user: "2000:2000", wantUser: "2000:2000"},
		{name: "a root-owned directory", owner: &HostOwner{UID: 0, GID: 0}, key: "workspace.host_path"},
		{name: "sandbox.user root", owner: &HostOwner{UID: 1000, GID: 100}, user: "root", key: "sandbox.user"},
		{name: "sandbox.user 0:0", owner: &HostOwner{UID: 1000, GID: 100}, user: "0:0", key: "sandbox.user"},
		{name: "sandbox.user 000", owner: &HostOwner{UID: 1000, GID: 100}, user: "000", key: "sandbox.user"},
		{name: "an unknown owner", owner: nil, key: "sandbox.user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := hostMountRequest(tt.owner)
			req.Sandbox.User = tt.user
			p, err := Normalize(req)
			if tt.key != "" {
				wantConfigError(t, err, tt.key, nil)
				if !errorsIsAny(err, errdefs.ErrRefused, errdefs.ErrMissingRequired) {
					t.Errorf("err = %v, want refused or missing", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.User != tt.wantUser {
				t.Errorf("User = %q, want %q", p.User, tt.wantUser)
			}
			if len(p.Security.CapAdd) != 0 {
				t.Errorf("a non-root agent keeps capabilities %v", p.Security.CapAdd)
			}
			exec, _ := p.AgentExec()
			if exec.User != tt.wantUser {
				t.Errorf("agent exec user = %q, want %q", exec.User, tt.wantUser)
			}
		})
	}
}

func TestHostMountAgentHome(t *testing.T) {
	p, err := Normalize(hostMountRequest(&HostOwner{UID: 1000, GID: 100}))
	if err != nil {
		t.Fatal(err)
	}
	if p.Home != AgentHome || !slices.Contains(p.Env, "HOME="+AgentHome) {
		t.Errorf("Home = %q, Env = %v", p.Home, p.Env)
	}
	if uid, gid, ok := p.NumericUser(); !ok || uid != 1000 || gid != 100 {
		t.Errorf("NumericUser = %d %d %v", uid, gid, ok)
	}
	// A clone workspace keeps the image's user and home.
	req := baseRequest(IntentInteractive, KindClaude, "")
	req.Workspace = Workspace{Strategy: WorkspaceGitHubClone, BaseDir: "/work"}
	p, err = Normalize(req)
	if err != nil {
		t.Fatal(err)
	}
	if p.Home != "" || p.User != "" {
		t.Errorf("clone: Home %q, User %q", p.Home, p.User)
	}
}

// .git/config and .git/hooks are read-only over the read-write .git, which
// is a mount point of its own so it cannot be renamed away and replaced.
func TestHostMountGitProtection(t *testing.T) {
	req := hostMountRequest(&HostOwner{UID: 1000, GID: 100})
	req.Workspace.GitDir = "/home/u/p/.git"
	p, err := Normalize(req)
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{
		{Source: "/home/u/p", Target: "/workspace", Origin: "workspace.host_path"},
		{Source: "/home/u/p/.git", Target: "/workspace/.git", Origin: "workspace.host_path"},
		{Source: "/home/u/p/.git/config", Target: "/workspace/.git/config", ReadOnly: true, Origin: "workspace.host_path"},
		{Source: "/home/u/p/.git/hooks", Target: "/workspace/.git/hooks", ReadOnly: true, Origin: "workspace.host_path"},
	}
	if !slices.Equal(p.Mounts, want) {
		t.Errorf("mounts = %+v\nwant %+v", p.Mounts, want)
	}
	// The guard still runs over the extra mounts.
	req.EngineSocketPaths = []string{"/home/u/p/.git/hooks/engine.sock"}
	if _, err := Normalize(req); err == nil {
		t.Error("a socket under .git/hooks was not refused")
	}
}

func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
