package launchplan

import (
	"path"
	"regexp"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// Label keys podbot sets on every container it creates.
const (
	LabelManaged   = "podbot.managed"
	LabelVersion   = "podbot.version"
	LabelIntent    = "podbot.intent"
	LabelAgentKind = "podbot.agent.kind"
	LabelSession   = "podbot.session"
	// LabelPool names the warm pool a container was made for. It stays
	// after the member is claimed (engines cannot change labels); a
	// member's name tells whether it is still the pool's (see package pool).
	LabelPool = "podbot.pool"
	// LabelPoolDir is the host directory a tools pool member was made with
	// (its workspace's parent).
	LabelPoolDir = "podbot.pool.dir"
	// LabelGitHubToken is "true" on a container whose token directory is
	// mounted (WithTokenMount): podbot token-daemon keeps its token fresh.
	LabelGitHubToken = "podbot.github_token"
	// LabelGitHubRepo is the owner/name of the repository a container's
	// installation tokens are scoped to.
	LabelGitHubRepo = "podbot.github_repo"
	// LabelGitHubOrigin is the one origin (scheme://host[:port]) git in the
	// container may send its token to.
	LabelGitHubOrigin = "podbot.github_origin"
)

var (
	sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)
	containerName    = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$`)
)

// shortIDLen is how many characters of the session id go into the name.
const shortIDLen = 12

// Normalize validates a request and resolves it into a hardened plan. It does
// no I/O. Errors are *errdefs.ConfigError naming the offending key.
func Normalize(req Request) (Plan, error) {
	image := strings.TrimSpace(req.Image)
	if image == "" {
		return Plan{}, configError("image", errdefs.ErrMissingRequired,
			"no image is configured; set image in the config file, PODBOT_IMAGE or --image")
	}
	if strings.ContainsAny(image, " \t\r\n") || hasControl(image) {
		return Plan{}, configError("image", errdefs.ErrInvalidValue, "image reference %q contains whitespace", image)
	}
	mode, err := resolveMode(req.Intent, req.Agent)
	if err != nil {
		return Plan{}, err
	}
	argv, err := agentCommand(req.Agent, mode)
	if err != nil {
		return Plan{}, err
	}
	if !sessionIDPattern.MatchString(req.SessionID) {
		return Plan{}, configError("session", errdefs.ErrInvalidValue,
			"session id %q must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit", req.SessionID)
	}
	name, err := planName(req)
	if err != nil {
		return Plan{}, err
	}
	initCmd := req.InitCommand
	if len(initCmd) == 0 {
		initCmd = DefaultInitCommand()
	}
	version := req.Version
	if version == "" {
		version = "unknown"
	}
	kindLabel := string(req.Agent.Kind)
	if kindLabel == "" {
		kindLabel = "none"
	}
	def := defaultsFor(req.Intent)
	p := Plan{
		Intent:       req.Intent,
		AgentKind:    req.Agent.Kind,
		AgentMode:    mode,
		Image:        image,
		Name:         name,
		InitCommand:  append([]string(nil), initCmd...),
		AgentCommand: argv,
		Workspace:    req.Workspace.Strategy,
		Stream:       def.stream,
		Labels: map[string]string{
			LabelManaged:   "true",
			LabelVersion:   version,
			LabelIntent:    string(req.Intent),
			LabelAgentKind: kindLabel,
			LabelSession:   req.SessionID,
		},
	}
	if p.Workspace == "" {
		p.Workspace = WorkspaceNone
	}
	opts, err := optionsFor(req, def)
	if err != nil {
		return Plan{}, err
	}
	if err := p.Apply(opts...); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// planName returns the requested name, checked, or podbot-<kind>-<short id>.
func planName(req Request) (string, error) {
	if req.Name != "" {
		if !containerName.MatchString(req.Name) {
			return "", configError("name", errdefs.ErrInvalidValue,
				"container name %q must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit", req.Name)
		}
		return req.Name, nil
	}
	kind := string(req.Agent.Kind)
	if kind == "" {
		kind = "sandbox"
		if req.Intent == IntentTools {
			kind = "tools"
		}
	}
	short := strings.ToLower(strings.NewReplacer("-", "", "_", "", ".", "").Replace(req.SessionID))
	if len(short) > shortIDLen {
		short = short[:shortIDLen]
	}
	return "podbot-" + kind + "-" + short, nil
}

// optionsFor lists the options a request implies, in the order they apply.
func optionsFor(req Request, def intentDefaults) ([]Option, error) {
	sb := req.Sandbox
	opts := []Option{
		WithSocketGuard(req.EngineSocketPaths...),
		WithEnv(req.Env...),
		WithAgentEnv(req.AgentEnv...),
		WithNoNewPrivileges(),
	}
	ws, err := workspaceOptions(req)
	if err != nil {
		return nil, err
	}
	user, err := agentUser(req, def)
	if err != nil {
		return nil, err
	}
	if user != "" {
		opts = append(opts, WithUser(user))
		if req.Workspace.Strategy == WorkspaceHostMount && user != sb.User && !sb.Privileged && req.Intent != IntentTools {
			opts = append(opts, WithAgentHome(AgentHome))
		}
	}
	if sb.Privileged {
		opts = append(opts, WithPrivileged())
	} else {
		opts = append(opts,
			WithCapDropAll(append(defaultCapsFor(user, def.keepCaps), sb.CapAdd...)...),
			WithMinimalProfile(sb.MountDevFuse, sb.SELinuxLabelMode))
	}
	opts = append(opts,
		WithPidsLimit(pick(sb.PidsLimit, def.pids)),
		WithMemory(pick(sb.MemoryBytes, def.memory)),
		WithCPUs(pick(sb.NanoCPUs, def.cpus)),
	)
	network := sb.Network
	if network == "" {
		network = def.network
	}
	opts = append(opts, WithNetwork(network))
	if req.Egress.Mode != "" {
		opts = append(opts, func(p *Plan) error { p.Egress = req.Egress; return nil })
	}
	readOnly := def.readOnlyRootfs
	if sb.ReadOnlyRootfs != nil {
		readOnly = *sb.ReadOnlyRootfs
	}
	if readOnly {
		opts = append(opts, WithReadOnlyRootfs())
	}
	if len(sb.GPUs) > 0 {
		opts = append(opts, WithGPUs(sb.GPUs...))
	}
	if len(req.Labels) > 0 {
		opts = append(opts, WithLabels(req.Labels))
	}
	opts = append(opts, ws...)
	if req.TokenFile != "" {
		opts = append(opts, WithTokenMount(req.TokenFile))
	}
	return opts, nil
}

// workspaceOptions checks the workspace strategy and returns its options.
func workspaceOptions(req Request) ([]Option, error) {
	w := req.Workspace
	switch w.Strategy {
	case "", WorkspaceNone:
		if w.HostPath != "" {
			return nil, configError("workspace.host_path", errdefs.ErrConflict,
				"workspace.host_path is set but workspace.source is not host_mount")
		}
		return nil, nil
	case WorkspaceGitHubClone, WorkspaceLocalClone:
		if req.Intent == IntentTools {
			return nil, configError("workspace.source", errdefs.ErrConflict,
				"tool sessions use a host_mount workspace at %s, not %s", ToolsWorkspace, w.Strategy)
		}
		if w.HostPath != "" {
			return nil, configError("workspace.host_path", errdefs.ErrConflict,
				"%s takes no workspace.host_path; remove it or use workspace.source = host_mount", w.Strategy)
		}
		dir, key := w.ContainerPath, "workspace.container_path"
		if dir == "" {
			dir, key = w.BaseDir, "workspace.base_dir"
		}
		if err := checkContainerPath(key, dir); err != nil {
			return nil, err
		}
		return []Option{func(p *Plan) error { p.WorkingDir = dir; return nil }}, nil
	case WorkspaceHostMount:
		target := w.ContainerPath
		if target == "" {
			target = DefaultHostMountTarget
		}
		opts := []Option{WithWorkspaceMount(w.HostPath, target)}
		if w.GitDir != "" {
			opts = append(opts, WithGitProtection(w.GitDir, path.Join(target, ".git")))
		}
		return opts, nil
	}
	return nil, configError("workspace.source", errdefs.ErrInvalidValue,
		"unknown workspace source %q; use github_clone, local_clone, host_mount or none", w.Strategy)
}

// defaultCapsFor is the default kept capability list for user. A non-root
// user keeps none: Docker gives it no effective capabilities anyway, but
// Podman turns added capabilities into ambient ones, so a non-root process
// there would hold them all. Capabilities asked for explicitly (CapAdd) are
// still added.
func defaultCapsFor(user string, keep []string) []string {
	name, _, _ := strings.Cut(user, ":")
	if name != "" && name != "root" && name != "0" {
		return nil
	}
	return append([]string(nil), keep...)
}
