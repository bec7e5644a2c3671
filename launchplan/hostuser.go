package launchplan

import (
	"path"
	"strconv"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// AgentHome is the home directory podbot prepares for an agent that runs as
// a host user's uid (a host-mount workspace): the image has no passwd entry
// for that uid, so its home would otherwise be "/".
const AgentHome = "/home/podbot"

// agentUser picks the container user. A host-mount agent runs as the host
// user that owns the mounted directory, never as root: root in a container
// without a user namespace is root on the host's files, and could leave a
// root-owned, setuid binary in the user's directory. sandbox.user may name
// another unprivileged user; root is refused. The privileged profile is
// exempt: it gives the container the host's root anyway (see the README's
// threat model).
func agentUser(req Request, def intentDefaults) (string, error) {
	sb := req.Sandbox
	user := sb.User
	if req.Workspace.Strategy != WorkspaceHostMount || sb.Privileged || req.Intent == IntentTools {
		if user == "" {
			user = def.user
		}
		return user, nil
	}
	if user != "" {
		if isRootUser(user) {
			return "", configError("sandbox.user", errdefs.ErrRefused,
				"sandbox.user %q runs the agent as root on the host-mounted directory %s, where it could leave root-owned or setuid files; "+
					"remove sandbox.user (podbot then runs the agent as the directory's owner) or name an unprivileged uid:gid", user, req.Workspace.HostPath)
		}
		return user, nil
	}
	o := req.Workspace.Owner
	if o == nil {
		return "", configError("sandbox.user", errdefs.ErrMissingRequired,
			"podbot cannot tell who owns %s on this platform; set sandbox.user to the unprivileged uid:gid the agent should write as", req.Workspace.HostPath)
	}
	if o.UID == 0 {
		return "", configError("workspace.host_path", errdefs.ErrRefused,
			"%s belongs to root; podbot runs a host-mount agent as the directory's owner so nothing it writes belongs to root. "+
				"Mount a directory owned by your user (chown it) or set sandbox.user to an unprivileged uid:gid", req.Workspace.HostPath)
	}
	return strconv.Itoa(o.UID) + ":" + strconv.Itoa(o.GID), nil
}

// isRootUser reports whether a user spec names uid 0 or the root user.
func isRootUser(user string) bool {
	name, _, _ := strings.Cut(user, ":")
	return name == "root" || strings.TrimLeft(name, "0") == "" && name != ""
}

// WithAgentHome sets HOME for an agent that runs as a bare uid and records
// it in Plan.Home, so the launch prepares that directory, owned by the
// agent's user, before anything is copied into it.
func WithAgentHome(home string) Option {
	return func(p *Plan) error {
		if err := checkContainerPath("sandbox.user", home); err != nil {
			return err
		}
		p.Home = home
		p.Env = append(p.Env, "HOME="+home)
		return nil
	}
}

// WithGitProtection keeps a host-mounted repository's .git/config and
// .git/hooks read-only in the container, so the agent cannot plant hooks,
// core.fsmonitor or core.hooksPath that git would run as the user on the
// host, while commits (objects, refs, index) still work. .git itself becomes
// a mount point too, so it cannot be renamed away and replaced with a
// directory of the agent's making. gitDir is the canonical host .git
// directory, target its container path.
func WithGitProtection(gitDir, target string) Option {
	return func(p *Plan) error {
		if err := checkHostPath("workspace.host_path", gitDir); err != nil {
			return err
		}
		if err := checkContainerPath("workspace.container_path", target); err != nil {
			return err
		}
		p.Mounts = append(p.Mounts,
			Mount{Source: gitDir, Target: target, Origin: "workspace.host_path"},
			Mount{Source: path.Join(gitDir, "config"), Target: path.Join(target, "config"), ReadOnly: true, Origin: "workspace.host_path"},
			Mount{Source: path.Join(gitDir, "hooks"), Target: path.Join(target, "hooks"), ReadOnly: true, Origin: "workspace.host_path"},
		)
		return guardMounts(p.Mounts[len(p.Mounts)-3:], p.EngineSocketPaths)
	}
}

// NumericUser returns the plan's user as numbers when it is written as
// uid:gid (as a host-mount agent's is), and false otherwise.
func (p Plan) NumericUser() (uid, gid int, ok bool) {
	u, g, found := strings.Cut(p.User, ":")
	if !found {
		return 0, 0, false
	}
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if err1 != nil || err2 != nil || uid < 0 || gid < 0 {
		return 0, 0, false
	}
	return uid, gid, true
}
