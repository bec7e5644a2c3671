package config

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/podbot/podbot/agentkind"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/errdefs"
)

// legalModes lists the modes each agent kind supports. Claude Code has no
// protocol server of its own, so it runs interactively only; Codex also
// serves its app-server protocol; a custom command may be any of the three.
func legalModes(kind string) []string {
	switch kind {
	case KindClaude:
		return []string{ModePodbot}
	case KindCodex:
		return []string{ModePodbot, ModeCodexAppServer}
	case KindCustom:
		return []string{ModePodbot, ModeACP, ModeCodexAppServer}
	}
	if agentkind.IsACPKind(kind) {
		return []string{ModeACP}
	}
	return nil
}

var (
	networkNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	userRE        = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,31})?$`)
	envVarRE      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	cdiNameRE     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]*/[A-Za-z0-9][A-Za-z0-9._-]*=[A-Za-z0-9*][A-Za-z0-9._:*-]*$`)
)

// engineEnvVars lists variables that lead to the host's container engine;
// they are never passed to an agent.
func engineEnvVars() []string {
	return []string{"DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY", "CONTAINER_HOST", "CONTAINER_CONNECTION", "PODMAN_HOST"}
}

// minMemory is the smallest memory limit the engines accept.
const minMemory = 6 * MiB

// validator collects one error per offending key.
type validator struct{ errs []error }

func (v *validator) add(key string, reason error, format string, args ...any) {
	v.errs = append(v.errs, &errdefs.ConfigError{Key: key, Reason: reason, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) err() error { return errors.Join(v.errs...) }

// Validate checks values and combinations of values. It returns every
// problem found, joined; each is an *errdefs.ConfigError naming its key.
func (c Config) Validate() error {
	var v validator
	v.image("image", c.Image)
	c.GitHub.validate(&v)
	c.Workspace.validate(&v)
	c.Creds.validate(&v)
	c.Sandbox.validate(&v)
	c.Network.validate(&v)
	v.sandboxNetwork(c.Network.Mode, c.Sandbox.Network)
	c.Agent.validate(&v)
	c.validateEndpointEgress(&v)
	if c.ACP.MaxFrameBytes < KiB || c.ACP.MaxFrameBytes > GiB {
		v.add("acp.max_frame_bytes", errdefs.ErrInvalidValue, "got %s; expected between 1k and 1g", c.ACP.MaxFrameBytes)
	}
	c.Tools.validate(&v)
	c.Pool.validate(&v)
	c.Kubernetes.validate(&v)
	c.validateSecrets(&v)
	return v.err()
}

// ValidateFor validates c and checks that it suits a subcommand: "run"
// refuses protocol-hosting modes and "host" refuses the interactive mode.
// Other commands get Validate alone.
func (c Config) ValidateFor(command string) error {
	var v validator
	if err := c.Validate(); err != nil {
		v.errs = append(v.errs, err)
	}
	switch command {
	case "run":
		if c.Agent.Hosted() {
			v.add("agent.mode", errdefs.ErrConflict,
				"%q is a protocol-hosting mode; podbot run needs agent.mode = \"podbot\" (or use podbot host)", c.Agent.Mode)
		}
	case "host":
		if !c.Agent.Hosted() {
			v.add("agent.mode", errdefs.ErrConflict,
				"%q is interactive; podbot host needs agent.mode = \"acp\" or \"codex_app_server\" (or use podbot run)", c.Agent.Mode)
		}
	}
	return v.err()
}

// tokenPermissions checks the shape of the token permissions: at least one,
// each a GitHub permission name (lower case letters and '_') with the level
// read or write. The github package checks the names against GitHub's list.
func (v *validator) tokenPermissions(key string, perms map[string]string) {
	if len(perms) == 0 {
		v.add(key, errdefs.ErrMissingRequired, "no permissions; installation tokens need at least one, for example { contents = \"write\", metadata = \"read\" }")
		return
	}
	for _, name := range slices.Sorted(maps.Keys(perms)) {
		level := perms[name]
		if name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz_") != "" {
			v.add(key, errdefs.ErrInvalidValue, "entry %q: %q is not a GitHub permission name (lower case letters and _, such as contents or pull_requests)", name+" = "+level, name)
			continue
		}
		if level != "read" && level != "write" {
			v.add(key, errdefs.ErrInvalidValue, "entry %q: the level must be \"read\" or \"write\", got %q", name+" = "+level, level)
		}
	}
}

func (v *validator) image(key, ref string) {
	switch {
	case strings.TrimSpace(ref) == "":
		v.add(key, errdefs.ErrMissingRequired, "no image configured; set %s", key)
	case strings.ContainsAny(ref, " \t\r\n"):
		v.add(key, errdefs.ErrInvalidValue, "image reference %q contains whitespace", ref)
	}
}

// containerPath checks an in-container directory: absolute, clean, not "/".
func (v *validator) containerPath(key, p string) {
	switch {
	case !path.IsAbs(p):
		v.add(key, errdefs.ErrInvalidValue, "got %q; expected an absolute path such as /workspace", p)
	case p == "/":
		v.add(key, errdefs.ErrInvalidValue, "must not be /; use a directory such as /workspace")
	case path.Clean(p) != p:
		v.add(key, errdefs.ErrInvalidValue, "got %q; write it as %q", p, path.Clean(p))
	}
}

// hostRoots checks a list of host directories used as allowlist roots.
func (v *validator) hostRoots(key string, roots []string) {
	for _, r := range roots {
		switch {
		case !filepath.IsAbs(r):
			v.add(key, errdefs.ErrInvalidValue, "root %q is not an absolute path", r)
		case filepath.Clean(r) == string(filepath.Separator):
			v.add(key, errdefs.ErrInvalidValue, "root / would allow the whole host; name narrower directories")
		}
	}
}

func (v *validator) network(key, n string) {
	switch {
	case n == "" || n == "none" || n == "bridge":
	case n == "host":
		v.add(key, errdefs.ErrInvalidValue, "host networking is refused: it shares the host's network namespace with the sandbox; use bridge or none")
	case !networkNameRE.MatchString(n):
		v.add(key, errdefs.ErrInvalidValue, "got %q; expected none, bridge or the name of an engine network", n)
	}
}

func (v *validator) user(key, u string) {
	if u != "" && !userRE.MatchString(u) {
		v.add(key, errdefs.ErrInvalidValue, "got %q; expected user or user:group, by name or numeric id (e.g. 1000:1000)", u)
	}
}

func (v *validator) memory(key string, m ByteSize) {
	if m != 0 && m < minMemory {
		v.add(key, errdefs.ErrInvalidValue, "got %s; expected 0 (no limit) or at least 6m", m)
	}
}

func (v *validator) cpus(key string, n float64) {
	if n < 0 || n > 1024 {
		v.add(key, errdefs.ErrInvalidValue, "got %v; expected 0 (no limit) up to 1024", n)
	}
}

// cpuSet checks the shape of a CPU placement: auto, none or a CPU list of
// digits, commas and dashes. The session that uses it parses the list.
func (v *validator) cpuSet(key, s string) {
	if s == "auto" || s == "none" {
		return
	}
	if s == "" || len(s) > 1024 || strings.Trim(s, "0123456789,-") != "" {
		v.add(key, errdefs.ErrInvalidValue, "got %q; expected auto, none or a CPU list such as 0-1,3", s)
	}
}

func (v *validator) pids(key string, n int64) {
	if n < 0 {
		v.add(key, errdefs.ErrInvalidValue, "got %d; expected 0 (no limit) or a positive number", n)
	}
}

func (v *validator) baseURL(key, raw string) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		v.add(key, errdefs.ErrInvalidValue, "got %q; expected an http(s) URL such as https://github.example.com/", raw)
	case u.User != nil:
		v.add(key, errdefs.ErrInvalidValue, "must not contain credentials; podbot authenticates with the GitHub App")
	case u.RawQuery != "" || u.Fragment != "":
		v.add(key, errdefs.ErrInvalidValue, "got %q; expected a base URL without query or fragment", raw)
	}
}

func (g GitHub) validate(v *validator) {
	if g.AppID < 0 {
		v.add("github.app_id", errdefs.ErrInvalidValue, "got %d; expected a positive numeric id", g.AppID)
	}
	if g.InstallationID < 0 {
		v.add("github.installation_id", errdefs.ErrInvalidValue, "got %d; expected a positive numeric id", g.InstallationID)
	}
	if g.Configured() {
		if g.AppID == 0 {
			v.add("github.app_id", errdefs.ErrMissingRequired, "the GitHub App is partly configured; set github.app_id too")
		}
		if g.InstallationID == 0 {
			v.add("github.installation_id", errdefs.ErrMissingRequired, "the GitHub App is partly configured; set github.installation_id too")
		}
		if g.PrivateKeyPath == "" {
			v.add("github.private_key_path", errdefs.ErrMissingRequired, "the GitHub App is partly configured; set github.private_key_path too")
		}
	}
	if g.PrivateKeyPath != "" && !filepath.IsAbs(g.PrivateKeyPath) {
		v.add("github.private_key_path", errdefs.ErrInvalidValue, "got %q; expected an absolute path", g.PrivateKeyPath)
	}
	v.baseURL("github.api_url", g.APIURL)
	v.baseURL("github.clone_base_url", g.CloneBaseURL)
	v.tokenPermissions("github.token_permissions", g.TokenPermissions)
	if g.TokenRefreshBuffer <= 0 || g.TokenRefreshBuffer >= time.Hour {
		v.add("github.token_refresh_buffer", errdefs.ErrInvalidValue,
			"got %s; expected more than 0 and less than 1h (installation tokens live one hour)", g.TokenRefreshBuffer)
	}
}

func (w Workspace) validate(v *validator) {
	switch w.Source {
	case SourceGitHubClone:
		if w.HostPath != "" {
			v.add("workspace.host_path", errdefs.ErrConflict,
				"is set but workspace.source is github_clone; remove it or set workspace.source = \"host_mount\"")
		}
	case SourceHostMount:
		switch {
		case w.HostPath == "":
			v.add("workspace.host_path", errdefs.ErrMissingRequired, "host_mount needs workspace.host_path (an absolute host directory)")
		case !filepath.IsAbs(w.HostPath):
			v.add("workspace.host_path", errdefs.ErrInvalidValue, "got %q; host_mount needs an absolute host path", w.HostPath)
		}
		if len(w.AllowedRoots) == 0 {
			v.add("workspace.allowed_roots", errdefs.ErrMissingRequired,
				"host_mount needs at least one allowed root, e.g. workspace.allowed_roots = [\"/home/me/src\"]")
		}
	case SourceLocalClone:
		if w.HostPath != "" {
			v.add("workspace.host_path", errdefs.ErrConflict,
				"is set but workspace.source is local_clone; the repository is workspace.repo_path (or --repo PATH)")
		}
		if w.RepoPath != "" && !filepath.IsAbs(w.RepoPath) {
			v.add("workspace.repo_path", errdefs.ErrInvalidValue, "got %q; local_clone needs an absolute host path", w.RepoPath)
		}
	default:
		v.add("workspace.source", errdefs.ErrInvalidValue, "got %q; expected github_clone, local_clone or host_mount", w.Source)
	}
	v.containerPath("workspace.base_dir", w.BaseDir)
	v.containerPath("workspace.container_path", w.ContainerPath)
	v.hostRoots("workspace.allowed_roots", w.AllowedRoots)
}

func (c Creds) validate(v *validator) {
	for _, p := range c.Exclude {
		if _, err := path.Match(p, ""); err != nil || p == "" || path.IsAbs(p) {
			v.add("creds.exclude", errdefs.ErrInvalidValue, "pattern %q is not a valid relative glob (e.g. .codex/sessions)", p)
		}
	}
}

func (s Sandbox) validate(v *validator) {
	if s.SELinuxLabelMode != SELinuxDisableForContainer && s.SELinuxLabelMode != SELinuxKeepDefault {
		v.add("sandbox.selinux_label_mode", errdefs.ErrInvalidValue,
			"got %q; expected disable_for_container or keep_default", s.SELinuxLabelMode)
	}
	v.pids("sandbox.pids_limit", s.PidsLimit)
	v.memory("sandbox.memory", s.Memory)
	v.cpus("sandbox.cpus", s.CPUs)
	v.network("sandbox.network", s.Network)
	for _, g := range s.GPUs {
		if !cdiNameRE.MatchString(g) {
			v.add("sandbox.gpus", errdefs.ErrInvalidValue, "got %q; expected a CDI device name such as nvidia.com/gpu=all", g)
		}
	}
	v.user("sandbox.user", s.User)
	if s.Backend != BackendEngine && s.Backend != BackendKubernetes {
		v.add("sandbox.backend", errdefs.ErrInvalidValue, "got %q; expected engine or kubernetes", s.Backend)
	}
}

// dnsLabel is a Kubernetes object name: a DNS-1123 label.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// dnsSubdomain is a Kubernetes object name that may hold dots.
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)

func (k Kubernetes) validate(v *validator) {
	if k.Namespace != "" && !dnsLabel.MatchString(k.Namespace) {
		v.add("kubernetes.namespace", errdefs.ErrInvalidValue, "got %q; expected a namespace name (lower-case letters, digits and '-', at most 63)", k.Namespace)
	}
	if k.RuntimeClass != "" && !dnsSubdomain.MatchString(k.RuntimeClass) {
		v.add("kubernetes.runtime_class", errdefs.ErrInvalidValue, "got %q; expected a RuntimeClass name such as gvisor", k.RuntimeClass)
	}
	if k.ServiceAccount != "" && !dnsSubdomain.MatchString(k.ServiceAccount) {
		v.add("kubernetes.service_account", errdefs.ErrInvalidValue, "got %q; expected a service account name", k.ServiceAccount)
	}
	switch k.ImagePullPolicy {
	case "", "Always", "IfNotPresent", "Never":
	default:
		v.add("kubernetes.image_pull_policy", errdefs.ErrInvalidValue, "got %q; expected Always, IfNotPresent or Never", k.ImagePullPolicy)
	}
	for _, t := range k.Tolerations {
		if _, err := ParseToleration(t); err != nil {
			v.add("kubernetes.tolerations", errdefs.ErrInvalidValue, "%s", err)
		}
	}
	if k.Kubeconfig != "" && !filepath.IsAbs(k.Kubeconfig) {
		v.add("kubernetes.kubeconfig", errdefs.ErrInvalidValue, "got %q; expected an absolute path", k.Kubeconfig)
	}
}

// ValidateNetwork checks the [network] section and its agreement with
// sandbox.network, as Validate does, for callers that build a policy from
// a Config they did not load. Errors are joined *errdefs.ConfigError.
func (c Config) ValidateNetwork() error {
	var v validator
	c.Network.validate(&v)
	v.sandboxNetwork(c.Network.Mode, c.Sandbox.Network)
	c.validateSecrets(&v)
	return v.err()
}

func (n Network) validate(v *validator) {
	if m, err := egress.ParseMode(n.Mode); err != nil || string(m) != n.Mode {
		v.add("network.mode", errdefs.ErrInvalidValue, "got %q; expected allowlist, none or open", n.Mode)
	}
	for _, r := range n.Allow {
		if _, err := egress.ParseRule(r); err != nil {
			v.add("network.allow", errdefs.ErrInvalidValue, "%s", err)
		}
	}
	for _, p := range n.Presets {
		if !slices.Contains(egress.PresetNames(), p) {
			v.add("network.presets", errdefs.ErrInvalidValue, "entry %q is not a preset; expected some of %s", p, strings.Join(egress.PresetNames(), ", "))
		}
	}
	pinned := map[string]string{}
	for _, e := range n.Resolve {
		host, addr, err := egress.ParsePin(e)
		switch {
		case err != nil:
			v.add("network.resolve", errdefs.ErrInvalidValue, "%s", err)
		case pinned[host] != "" && pinned[host] != addr:
			v.add("network.resolve", errdefs.ErrConflict, "entry %q pins %s again; it is already pinned to %s", e, host, pinned[host])
		default:
			pinned[host] = addr
		}
	}
	if n.UpstreamCA != "" && !filepath.IsAbs(n.UpstreamCA) {
		v.add("network.upstream_ca", errdefs.ErrInvalidValue, "got %q; expected the absolute path of a PEM file", n.UpstreamCA)
	}
}

// sandboxNetwork checks that sandbox.network agrees with network.mode.
// "none" always does (no network is stricter than any mode). bridge or a
// named network attaches the sandbox to a network podbot's egress policy
// does not control, so it needs mode open, the mode that says so.
func (v *validator) sandboxNetwork(mode, network string) {
	if network == "" || network == "none" || mode == NetworkOpen {
		return
	}
	if mode != NetworkAllowlist && mode != NetworkNone {
		return // reported under network.mode
	}
	v.add("sandbox.network", errdefs.ErrConflict,
		"%q attaches agent sandboxes to a network podbot's egress policy does not control, but network.mode is %q; set network.mode = \"open\" to keep that network without egress control, or remove sandbox.network", network, mode)
}

func (a Agent) validate(v *validator) {
	modes := legalModes(a.Kind)
	switch {
	case modes == nil:
		v.add("agent.kind", errdefs.ErrInvalidValue, "got %q; expected claude, codex, custom, %s", a.Kind, strings.Join(agentkind.Names(), ", "))
	case !slices.Contains([]string{ModePodbot, ModeACP, ModeCodexAppServer}, a.Mode):
		v.add("agent.mode", errdefs.ErrInvalidValue, "got %q; expected podbot, acp or codex_app_server", a.Mode)
	case !slices.Contains(modes, a.Mode) && a.Mode == ModeACP && agentkind.IsACPKind(a.Kind+"-acp"):
		v.add("agent.mode", errdefs.ErrConflict, "agent.kind %q does not serve ACP itself; use agent.kind = %q (--agent %s), its ACP adapter in the agent image",
			a.Kind, a.Kind+"-acp", a.Kind+"-acp")
	case !slices.Contains(modes, a.Mode):
		v.add("agent.mode", errdefs.ErrConflict, "agent.kind %q does not support mode %q; it supports %s (use kind = \"custom\" with agent.command for other servers)",
			a.Kind, a.Mode, strings.Join(modes, ", "))
	}
	if a.Kind == KindCustom {
		if strings.TrimSpace(a.Command) == "" {
			v.add("agent.command", errdefs.ErrMissingRequired, "agent.kind = \"custom\" needs agent.command (the executable to start)")
		} else if strings.ContainsAny(a.Command, " \t\r\n") {
			v.add("agent.command", errdefs.ErrInvalidValue, "got %q; name one executable and put its arguments in agent.args", a.Command)
		}
	} else if modes != nil {
		if a.Command != "" {
			v.add("agent.command", errdefs.ErrConflict, "agent.kind %q is built in and takes no command; use agent.kind = \"custom\" to run your own", a.Kind)
		}
		if len(a.Args) > 0 {
			v.add("agent.args", errdefs.ErrConflict, "agent.kind %q is built in and takes no args; pass extra arguments after -- on the command line", a.Kind)
		}
	}
	a.validateEndpoint(v)
	for _, name := range a.EnvAllowlist {
		switch {
		case !envVarRE.MatchString(name):
			v.add("agent.env_allowlist", errdefs.ErrInvalidValue, "got %q; expected an environment variable name", name)
		case slices.Contains(engineEnvVars(), strings.ToUpper(name)) || strings.HasPrefix(strings.ToUpper(name), envPrefix):
			v.add("agent.env_allowlist", errdefs.ErrInvalidValue, "%s would point the agent at the host's container engine or podbot itself; remove it", name)
		}
	}
	for _, name := range a.EnvRequired {
		if !slices.Contains(a.EnvAllowlist, name) {
			v.add("agent.env_required", errdefs.ErrConflict, "%s is required but not in agent.env_allowlist; add it there too", name)
		}
	}
}

func (p Pool) validate(v *validator) {
	if p.StateDir != "" && !filepath.IsAbs(p.StateDir) {
		v.add("pool.state_dir", errdefs.ErrInvalidValue, "got %q; expected an absolute path", p.StateDir)
	}
	if p.MaxAge < 0 {
		v.add("pool.max_age", errdefs.ErrInvalidValue, "got %s; expected 0 (never) or a positive duration", p.MaxAge)
	}
	if p.RefillInterval < 100*time.Millisecond || p.RefillInterval > time.Hour {
		v.add("pool.refill_interval", errdefs.ErrInvalidValue, "got %s; expected between 100ms and 1h", p.RefillInterval)
	}
}

func (t Tools) validate(v *validator) {
	v.image("tools.image", t.Image)
	if t.WorkspaceRoot != "" && !filepath.IsAbs(t.WorkspaceRoot) {
		v.add("tools.workspace_root", errdefs.ErrInvalidValue, "got %q; expected an absolute path", t.WorkspaceRoot)
	}
	if t.ShellTimeout < time.Second || t.ShellTimeout > 120*time.Second {
		v.add("tools.shell_timeout", errdefs.ErrInvalidValue, "got %s; expected between 1s and 2m", t.ShellTimeout)
	}
	v.memory("tools.memory", t.Memory)
	v.cpus("tools.cpus", t.CPUs)
	v.cpuSet("tools.cpuset", t.CPUSet)
	v.pids("tools.pids_limit", t.PidsLimit)
	v.network("tools.network", t.Network)
	v.user("tools.user", t.User)
	if t.IdleTimeout < 0 {
		v.add("tools.idle_timeout", errdefs.ErrInvalidValue, "got %s; expected 0 (never) or a positive duration", t.IdleTimeout)
	}
	if t.MaxUptime < 0 {
		v.add("tools.max_uptime", errdefs.ErrInvalidValue, "got %s; expected 0 (no limit) or a positive duration", t.MaxUptime)
	}
	v.hostRoots("tools.allowed_host_roots", t.AllowedHostRoots)
}

// validateEndpoint checks agent.model_endpoint and agent.model against the
// kind.
func (a Agent) validateEndpoint(v *validator) {
	if a.Model != "" && (strings.ContainsAny(a.Model, " \t\r\n\"\\") || len(a.Model) > 128) {
		v.add("agent.model", errdefs.ErrInvalidValue, "got %q; expected a model name (no spaces or quotes, at most 128 characters)", a.Model)
	}
	if a.ModelEndpoint == "" {
		if a.Model != "" {
			v.add("agent.model", errdefs.ErrConflict, "agent.model applies with agent.model_endpoint; set both, or choose the model in the agent's own configuration")
		}
		return
	}
	k, ok := agentkind.Lookup(a.Kind)
	if !ok {
		v.add("agent.model_endpoint", errdefs.ErrConflict, "agent.kind %q has no endpoint override; it applies to %s", a.Kind, strings.Join(agentkind.Names(), ", "))
		return
	}
	if _, err := k.EndpointEnv(a.ModelEndpoint, a.Model); err != nil {
		v.add("agent.model_endpoint", errdefs.ErrInvalidValue, "%v", err)
	}
}

// validateEndpointEgress refuses a plain-http model endpoint under the
// egress allowlist for agents whose HTTP client would tunnel it: the proxy
// admits only TLS in a tunnel, so every model request would fail.
func (c Config) validateEndpointEgress(v *validator) {
	k, ok := agentkind.Lookup(c.Agent.Kind)
	if !ok || !k.TunnelsHTTP || c.Network.Mode != NetworkAllowlist || !strings.HasPrefix(strings.ToLower(c.Agent.ModelEndpoint), "http://") {
		return
	}
	v.add("agent.model_endpoint", errdefs.ErrConflict,
		"%s sends http:// requests through the egress proxy as CONNECT tunnels, which the proxy admits for TLS only; use an https:// endpoint, or network.mode = \"open\" for a local mock (no egress control)", c.Agent.Kind)
}
