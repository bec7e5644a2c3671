package podbot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/podbot/podbot/agentkind"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/github"
	sandboximage "github.com/podbot/podbot/images/sandbox"
)

// CheckStatus is the verdict of one doctor check.
type CheckStatus string

// Check verdicts.
const (
	CheckOK   CheckStatus = "ok"
	CheckWarn CheckStatus = "warn"
	CheckFail CheckStatus = "fail"
)

// Check is one line of a doctor report.
type Check struct {
	// Name is the check's short name ("engine", "image", ...).
	Name string `json:"name"`
	// Status is ok, warn or fail.
	Status CheckStatus `json:"status"`
	// Detail says what was found.
	Detail string `json:"detail"`
	// Fix says, in one line, what to do about a warn or fail.
	Fix string `json:"fix,omitempty"`
}

// DoctorReport is the outcome of Doctor.
type DoctorReport struct {
	// Checks in the order they ran.
	Checks []Check `json:"checks"`
	// Endpoint is the engine endpoint used, and EndpointSource where it came from.
	Endpoint       string `json:"endpoint,omitempty"`
	EndpointSource string `json:"endpoint_source,omitempty"`
	// Engine describes the engine when it answered.
	Engine *engine.EngineInfo `json:"engine,omitempty"`
	// Agents lists the agents the configured image holds, with their
	// versions, from its agent-versions label.
	Agents []sandboximage.AgentVersion `json:"agents,omitempty"`
}

// Failed reports whether any check failed.
func (r DoctorReport) Failed() bool {
	for _, c := range r.Checks {
		if c.Status == CheckFail {
			return true
		}
	}
	return false
}

// HostProbe reads the facts about the host the doctor reports. The zero
// value reads the real host.
type HostProbe struct {
	// ReadFile reads a file (for /proc); nil means os.ReadFile.
	ReadFile func(path string) ([]byte, error)
	// Stat stats a path (for /dev/fuse); nil means os.Stat.
	Stat func(path string) (os.FileInfo, error)
}

func (h HostProbe) readFile(p string) ([]byte, error) {
	if h.ReadFile != nil {
		return h.ReadFile(p)
	}
	return os.ReadFile(p)
}

func (h HostProbe) stat(p string) (os.FileInfo, error) {
	if h.Stat != nil {
		return h.Stat(p)
	}
	return os.Stat(p)
}

// DoctorOptions is what Doctor checks. The caller loads the configuration
// and resolves the endpoint (so their errors are reported, not returned).
type DoctorOptions struct {
	// Config is the loaded configuration, or nil with ConfigErr set.
	Config    *config.Loaded
	ConfigErr error
	// Endpoint and EndpointSource come from engine.Resolve; EndpointErr if it failed.
	Endpoint       engine.Endpoint
	EndpointSource string
	EndpointErr    error
	// Connect opens the engine connection; nil means engine.Connect with no options.
	Connect func(ctx context.Context, ep engine.Endpoint) (*engine.Conn, error)
	// SidecarPath is where the podbot-sidecar binary was found ("" when not found),
	// and SidecarSearched lists where it was looked for.
	SidecarPath     string
	SidecarSearched []string
	// Host reads host facts; the zero value reads the real host.
	Host HostProbe
	// GitHubApp builds the GitHub App client the GitHub checks use when the
	// configuration names an App; nil means github.NewApp. Tests point it at
	// a fake API.
	GitHubApp func(cfg github.AppConfig) (*github.App, error)
}

// Doctor checks that podbot can work on this host: configuration, engine
// endpoint and reachability, engine kind and versions, OCI runtime and
// cgroups, rootless mode, default image, sidecar binary, the egress
// network and a throwaway egress proxy (started and removed), the kernel
// features nested containers need and, when one is configured, the GitHub
// App (key, App, installation). It never returns an error: every problem
// is a failed or warning check with a one-line fix.
func Doctor(ctx context.Context, opts DoctorOptions) DoctorReport {
	var r DoctorReport
	add := func(name string, st CheckStatus, detail, fix string) {
		r.Checks = append(r.Checks, Check{Name: name, Status: st, Detail: detail, Fix: fix})
	}

	image, kind := DefaultImage(), ""
	if opts.ConfigErr != nil {
		add("config", CheckFail, opts.ConfigErr.Error(), "fix the value named above, or see `podbot config show`")
	} else if opts.Config != nil {
		add("config", CheckOK, configDetail(opts.Config), "")
		if opts.Config.Config.Image != "" {
			image = opts.Config.Config.Image
		}
		kind = opts.Config.Config.Agent.Kind
	}

	conn := doctorEngine(ctx, &r, opts, add)
	if conn != nil {
		defer conn.Close()
		r.Agents = doctorImage(ctx, conn, image, kind, add)
	}

	if opts.SidecarPath != "" {
		add("sidecar", CheckOK, opts.SidecarPath, "")
	} else {
		add("sidecar", CheckWarn, "podbot-sidecar not found (looked in "+strings.Join(opts.SidecarSearched, ", ")+")",
			"install podbot-sidecar next to podbot (make build), or set PODBOT_SIDECAR_PATH")
	}
	if conn != nil {
		if doctorEgress(ctx, conn, opts.SidecarPath, add) {
			doctorProxy(ctx, conn, image, opts.SidecarPath, add)
		}
	}
	doctorHost(opts.Host, r.Engine, add)
	doctorNested(opts.Host, r.Engine, opts.Config, add)
	doctorIsolation(r.Engine, opts.Config, add)
	if opts.Config != nil && opts.Config.Config.GitHub.Configured() {
		doctorGitHub(ctx, opts.Config.Config.GitHub, opts.GitHubApp, add)
	}
	return r
}

func configDetail(l *config.Loaded) string {
	files := "no config file (defaults)"
	if len(l.Files) > 0 {
		files = "file " + strings.Join(l.Files, ", ")
	}
	var env, flags int
	for _, src := range l.Sources {
		switch {
		case strings.HasPrefix(src, "PODBOT_"):
			env++
		case strings.HasPrefix(src, "--"):
			flags++
		}
	}
	return fmt.Sprintf("%s; %d value(s) from the environment, %d from flags", files, env, flags)
}

func doctorEngine(ctx context.Context, r *DoctorReport, opts DoctorOptions, add func(string, CheckStatus, string, string)) *engine.Conn {
	if opts.EndpointErr != nil {
		add("engine endpoint", CheckFail, opts.EndpointErr.Error(), "start Podman or Docker, or pass --engine-socket URI")
		return nil
	}
	r.Endpoint, r.EndpointSource = opts.Endpoint.String(), opts.EndpointSource
	add("engine endpoint", CheckOK, fmt.Sprintf("%s (from %s)", r.Endpoint, r.EndpointSource), "")
	connect := opts.Connect
	if connect == nil {
		connect = func(ctx context.Context, ep engine.Endpoint) (*engine.Conn, error) { return engine.Connect(ctx, ep) }
	}
	conn, err := connect(ctx, opts.Endpoint)
	if err == nil {
		err = conn.Ping(ctx, 0)
		if err != nil {
			conn.Close()
		}
	}
	if err != nil {
		add("engine reachable", CheckFail, err.Error(), "start the engine (e.g. `podman system service --time=0 &`) or fix the endpoint")
		return nil
	}
	add("engine reachable", CheckOK, "answers ping", "")
	info, err := conn.Info(ctx)
	if err != nil {
		add("engine info", CheckFail, err.Error(), "check the engine's logs")
		return conn
	}
	r.Engine = &info
	add("engine", CheckOK, fmt.Sprintf("%s %s, API %s (server %s)", info.Kind, info.Version, info.APIVersion, info.ServerAPIVersion), "")
	rt := fmt.Sprintf("OCI runtime %s, cgroup v%s (%s)", orUnknown(info.OCIRuntime), orUnknown(info.CgroupVersion), orUnknown(info.CgroupDriver))
	if info.OCIRuntime == "crun" && info.CgroupVersion == "1" {
		add("runtime", CheckWarn, rt+": crun refuses hybrid cgroup v1 hosts",
			`set runtime = "runc" under [engine] in /etc/containers/containers.conf`)
	} else {
		add("runtime", CheckOK, rt, "")
	}
	mode := "rootful"
	if info.Rootless {
		mode = "rootless"
	}
	add("rootless", CheckOK, mode, "")
	return conn
}

func doctorImage(ctx context.Context, conn *engine.Conn, ref, kind string, add func(string, CheckStatus, string, string)) []sandboximage.AgentVersion {
	info, err := conn.API().ImageInspect(ctx, ref)
	if err != nil {
		add("image", CheckWarn, fmt.Sprintf("%s not present", ref), "build it with `podbot image build --bootstrap`")
		return nil
	}
	var labels map[string]string
	if info.Config != nil {
		labels = info.Config.Labels
	}
	v := labels["podbot.version"]
	if v != "" && v != Version && ref == DefaultImage() {
		add("image", CheckWarn, fmt.Sprintf("%s built by podbot %s", ref, v), "rebuild it with `podbot image build --force`")
	} else {
		add("image", CheckOK, ref+" present", "")
	}
	return doctorAgents(ref, labels, kind, add)
}

// doctorAgents reports the agents the image's label lists (no container
// is started) and warns when the configured kind's agent is not among
// them.
func doctorAgents(ref string, labels map[string]string, kind string, add func(string, CheckStatus, string, string)) []sandboximage.AgentVersion {
	agents := sandboximage.ParseAgentVersions(labels[sandboximage.AgentVersionsLabel])
	names := make([]string, 0, len(agents))
	have := map[string]bool{}
	for _, a := range agents {
		names = append(names, a.Name+" "+a.Version)
		have[a.Name] = true
	}
	detail := "none listed in " + ref
	if len(names) > 0 {
		detail = strings.Join(names, ", ")
	}
	want := ""
	switch {
	case kind == config.KindClaude || kind == config.KindCodex:
		want = kind
	case agentkind.IsACPKind(kind):
		k, _ := agentkind.Lookup(kind)
		want = k.CLI
	}
	if want != "" && !have[want] {
		add("agents", CheckWarn, fmt.Sprintf("%s; agent.kind %s needs %s", detail, kind, want),
			fmt.Sprintf("build an agent image with it (`podbot image build --bootstrap --agents %s`) and set image to it", want))
		return agents
	}
	add("agents", CheckOK, detail, "")
	return agents
}

// capSysResource is CAP_SYS_RESOURCE's bit in /proc/self/status CapBnd.
const capSysResource = 24

func doctorHost(h HostProbe, info *engine.EngineInfo, add func(string, CheckStatus, string, string)) {
	if st, err := h.stat("/dev/fuse"); err == nil && st.Mode()&os.ModeDevice != 0 {
		add("/dev/fuse", CheckOK, "present (fuse-overlayfs for nested containers)", "")
	} else {
		add("/dev/fuse", CheckWarn, "missing: nested containers need the privileged profile", "load the fuse module (`modprobe fuse`)")
	}
	if b, err := h.readFile("/proc/sys/user/max_user_namespaces"); err == nil {
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if n > 0 {
			add("user namespaces", CheckOK, fmt.Sprintf("enabled (max %d)", n), "")
		} else {
			add("user namespaces", CheckWarn, "disabled: rootless nested Podman will not work",
				"sysctl -w user.max_user_namespaces=15000")
		}
	} else {
		add("user namespaces", CheckWarn, "cannot read /proc/sys/user/max_user_namespaces", "")
	}
	doctorInotify(h, add)
	if info != nil && info.Kind == engine.KindDocker {
		if hasCap, ok := boundingCap(h, capSysResource); ok && !hasCap {
			add("privileged", CheckWarn, "dockerd on this host cannot start privileged containers: the capability bounding set lacks CAP_SYS_RESOURCE",
				"use Podman for sandbox.privileged = true, or keep the minimal profile")
		}
	}
}

// Inotify limits below which tool sessions' changed_files may fall back
// to walking the workspace around every command: each session's sidecar
// holds one inotify instance and a watch per workspace directory (up to
// 20,000), and the limits count per user on the host.
const (
	minInotifyWatches   = 20000
	minInotifyInstances = 64
)

// doctorInotify checks the kernel's inotify limits for tool sessions.
func doctorInotify(h HostProbe, add func(string, CheckStatus, string, string)) {
	limit := func(name string) (int, bool) {
		b, err := h.readFile("/proc/sys/fs/inotify/" + name)
		if err != nil {
			return 0, false
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		return n, err == nil
	}
	watches, ok1 := limit("max_user_watches")
	instances, ok2 := limit("max_user_instances")
	const fix = "sysctl -w fs.inotify.max_user_watches=524288 fs.inotify.max_user_instances=1024"
	switch {
	case !ok1 || !ok2:
		add("inotify", CheckWarn, "cannot read the limits in /proc/sys/fs/inotify: tool sessions may walk the workspace around every shell_execute", fix)
	case watches < minInotifyWatches || instances < minInotifyInstances:
		add("inotify", CheckWarn, fmt.Sprintf("max_user_watches %d, max_user_instances %d: large workspaces or many tool sessions fall back to walking the workspace around every shell_execute (slower changed_files)", watches, instances), fix)
	default:
		add("inotify", CheckOK, fmt.Sprintf("max_user_watches %d, max_user_instances %d (tool sessions track changed_files without walking the workspace)", watches, instances), "")
	}
}

// boundingCap reports whether capability bit is in this process's bounding
// set; ok is false when it cannot be read.
func boundingCap(h HostProbe, bit uint) (has, ok bool) {
	b, err := h.readFile(filepath.Join("/proc", "self", "status"))
	if err != nil {
		return false, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, found := strings.CutPrefix(line, "CapBnd:"); found {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, false
			}
			return mask&(1<<bit) != 0, true
		}
	}
	return false, false
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
