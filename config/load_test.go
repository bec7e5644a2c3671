package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot/errdefs"
)

// hermetic returns options that see no real files: every default location
// points into an empty temp dir.
func hermetic(t *testing.T) (LoadOptions, string) {
	t.Helper()
	dir := t.TempDir()
	return LoadOptions{
		HomeDir:       filepath.Join(dir, "home"),
		XDGConfigHome: filepath.Join(dir, "xdg"),
		SystemDir:     filepath.Join(dir, "etc"),
	}, dir
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustLoad(t *testing.T, opts LoadOptions) *Loaded {
	t.Helper()
	l, err := Load(opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return l
}

func TestDefaultsValidAndComplete(t *testing.T) {
	opts, _ := hermetic(t)
	l := mustLoad(t, opts)
	if !reflect.DeepEqual(l.Config, Default()) {
		t.Errorf("Load with nothing = %+v, want Default() %+v", l.Config, Default())
	}
	if err := Default().Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
	for _, ki := range Keys() {
		if l.Sources[ki.Key] != SourceDefault {
			t.Errorf("source of %s = %q, want default", ki.Key, l.Sources[ki.Key])
		}
	}
	if len(l.Files) != 0 {
		t.Errorf("Files = %v, want none", l.Files)
	}
	c := l.Config
	checks := []struct {
		name      string
		got, want any
	}{
		{"image", c.Image, "localhost/podbot-sandbox:latest"},
		{"container_path", c.Workspace.ContainerPath, "/workspace"},
		{"selinux", c.Sandbox.SELinuxLabelMode, SELinuxDisableForContainer},
		{"fuse", c.Sandbox.MountDevFuse, false},
		{"pids", c.Sandbox.PidsLimit, int64(4096)},
		{"memory", c.Sandbox.Memory, 4 * GiB},
		{"kind", c.Agent.Kind, KindClaude},
		{"mode", c.Agent.Mode, ModePodbot},
		{"source", c.Workspace.Source, SourceGitHubClone},
		{"base_dir", c.Workspace.BaseDir, "/work"},
		{"acp", c.ACP.MaxFrameBytes, 32 * MiB},
		{"tools.image", c.Tools.Image, "python:3.12-bookworm"},
		{"tools.idle", c.Tools.IdleTimeout, 15 * time.Minute},
		{"refresh", c.GitHub.TokenRefreshBuffer, 5 * time.Minute},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestKeysTable(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Keys() {
		if seen[k.Key] {
			t.Errorf("duplicate key %s", k.Key)
		}
		seen[k.Key] = true
		if k.Description == "" {
			t.Errorf("%s has no description", k.Key)
		}
		if want := "PODBOT_" + strings.ToUpper(strings.ReplaceAll(k.Key, ".", "_")); k.Env != want {
			t.Errorf("%s env = %s, want %s", k.Key, k.Env, want)
		}
	}
	for _, must := range []string{"engine_socket", "image", "sandbox.privileged", "agent.env_allowlist", "acp.max_frame_bytes", "tools.idle_timeout", "creds.exclude", "github.clone_base_url"} {
		if !seen[must] {
			t.Errorf("missing key %s", must)
		}
	}
	// Every default, read back through the environment parser, is the
	// typed default: the table documents what Load really uses.
	for _, d := range keyTable() {
		text := formatValue(d.def)
		if text == "" {
			continue
		}
		v, err := parseText(d.typ, text)
		if err != nil {
			t.Errorf("%s: default %q does not parse: %v", d.key, text, err)
			continue
		}
		if !reflect.DeepEqual(v, d.def) {
			t.Errorf("%s: default %q parses to %#v, want %#v", d.key, text, v, d.def)
		}
	}
}

// TestPrecedence checks file < env < flag for each key on its own, and
// that keys of one section merge independently across layers.
func TestPrecedence(t *testing.T) {
	opts, dir := hermetic(t)
	file := writeFile(t, filepath.Join(dir, "c.toml"), `
image = "from-file"
engine_socket = "unix:///file.sock"
[sandbox]
privileged = true
pids_limit = 100
memory = "1g"
cpus = 3
[agent]
env_allowlist = ["A", "B"]
`)
	opts.ConfigPath = file
	opts.Environ = []string{
		"PODBOT_IMAGE=from-env",
		"PODBOT_SANDBOX_PIDS_LIMIT=200",
		"PODBOT_AGENT_ENV_ALLOWLIST= C , ,D,",
		"PODBOT_SANDBOX_CPUS=", // empty: unset
		"PODBOT_TOOLS_CPUSET=0-1",
		"PODBOT_TOOLS_BATCH_SCHEDULING=false",
		"PODBOT_AGENT_ALLOW_TERMINAL_AUTH=true",
	}
	opts.Flags = map[string]string{"image": "from-flag", "sandbox.memory": "2g"}
	opts.FlagNames = map[string]string{"image": "--image"}
	l := mustLoad(t, opts)
	c := l.Config

	tests := []struct {
		key    string
		got    any
		want   any
		source string
	}{
		{"image", c.Image, "from-flag", "--image"},
		{"engine_socket", c.EngineSocket, "unix:///file.sock", file},
		{"sandbox.privileged", c.Sandbox.Privileged, true, file},
		{"sandbox.pids_limit", c.Sandbox.PidsLimit, int64(200), "PODBOT_SANDBOX_PIDS_LIMIT"},
		{"sandbox.memory", c.Sandbox.Memory, 2 * GiB, "--flag"},
		{"sandbox.cpus", c.Sandbox.CPUs, 3.0, file},
		{"tools.cpuset", c.Tools.CPUSet, "0-1", "PODBOT_TOOLS_CPUSET"},
		{"tools.batch_scheduling", c.Tools.BatchScheduling, false, "PODBOT_TOOLS_BATCH_SCHEDULING"},
		{"sandbox.selinux_label_mode", c.Sandbox.SELinuxLabelMode, SELinuxDisableForContainer, SourceDefault},
		{"sandbox.mount_dev_fuse", c.Sandbox.MountDevFuse, false, SourceDefault},
		{"agent.env_allowlist", c.Agent.EnvAllowlist, []string{"C", "D"}, "PODBOT_AGENT_ENV_ALLOWLIST"},
		{"agent.kind", c.Agent.Kind, KindClaude, SourceDefault},
		{"agent.allow_terminal_auth", c.Agent.AllowTerminalAuth, true, "PODBOT_AGENT_ALLOW_TERMINAL_AUTH"},
		{"agent.allow_host_delegation", c.Agent.AllowHostDelegation, false, SourceDefault},
	}
	for _, tc := range tests {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s = %#v, want %#v", tc.key, tc.got, tc.want)
		}
		if l.Sources[tc.key] != tc.source {
			t.Errorf("source of %s = %q, want %q", tc.key, l.Sources[tc.key], tc.source)
		}
	}
	if !reflect.DeepEqual(l.Files, []string{file}) {
		t.Errorf("Files = %v", l.Files)
	}
}

func TestFileLookup(t *testing.T) {
	cases := []struct {
		name  string
		files []string // relative to dir, created
		env   func(dir string) []string
		path  func(dir string) string // explicit ConfigPath
		want  string                  // relative to dir, "" = none
	}{
		{name: "none"},
		{name: "system only", files: []string{"etc/podbot/config.toml"}, want: "etc/podbot/config.toml"},
		{name: "home beats system", files: []string{"etc/podbot/config.toml", "home/.config/podbot/config.toml"}, want: "home/.config/podbot/config.toml"},
		{name: "xdg beats home", files: []string{"home/.config/podbot/config.toml", "xdg/podbot/config.toml"}, want: "xdg/podbot/config.toml"},
		{name: "env path beats xdg", files: []string{"xdg/podbot/config.toml", "envpath.toml"},
			env: func(d string) []string { return []string{"PODBOT_CONFIG_PATH=" + filepath.Join(d, "envpath.toml")} }, want: "envpath.toml"},
		{name: "flag beats env path", files: []string{"envpath.toml", "flag.toml"},
			env:  func(d string) []string { return []string{"PODBOT_CONFIG_PATH=" + filepath.Join(d, "envpath.toml")} },
			path: func(d string) string { return filepath.Join(d, "flag.toml") }, want: "flag.toml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts, dir := hermetic(t)
			for _, f := range tc.files {
				writeFile(t, filepath.Join(dir, f), "image = \"img-"+strings.ReplaceAll(f, "/", "-")+"\"\n")
			}
			if tc.env != nil {
				opts.Environ = tc.env(dir)
			}
			if tc.path != nil {
				opts.ConfigPath = tc.path(dir)
			}
			l := mustLoad(t, opts)
			if tc.want == "" {
				if len(l.Files) != 0 {
					t.Fatalf("Files = %v, want none", l.Files)
				}
				return
			}
			want := filepath.Join(dir, tc.want)
			if !reflect.DeepEqual(l.Files, []string{want}) {
				t.Fatalf("Files = %v, want %s", l.Files, want)
			}
			if l.Sources["image"] != want {
				t.Errorf("image source = %q, want %q", l.Sources["image"], want)
			}
		})
	}
}

func TestHomeAndXDGFromEnviron(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, filepath.Join(dir, "h", ".config", "podbot", "config.toml"), "image = \"x\"\n")
	l := mustLoad(t, LoadOptions{Environ: []string{"HOME=" + filepath.Join(dir, "h")}, SystemDir: filepath.Join(dir, "etc")})
	if l.Config.Image != "x" || l.Files[0] != p {
		t.Errorf("HOME from Environ not used: %+v", l.Files)
	}
}

// A config.toml in the working directory (an untrusted checkout) is never read.
func TestCurrentDirectoryIgnored(t *testing.T) {
	opts, dir := hermetic(t)
	work := filepath.Join(dir, "checkout")
	writeFile(t, filepath.Join(work, "config.toml"), "[sandbox]\nprivileged = true\n")
	writeFile(t, filepath.Join(work, "podbot", "config.toml"), "[sandbox]\nprivileged = true\n")
	writeFile(t, filepath.Join(work, ".config", "podbot", "config.toml"), "[sandbox]\nprivileged = true\n")
	t.Chdir(work)
	// Relative HOME / XDG values would resolve against the cwd: ignored too.
	opts.Environ = []string{"HOME=.", "XDG_CONFIG_HOME=."}
	opts.HomeDir, opts.XDGConfigHome = "", ""
	l := mustLoad(t, opts)
	if len(l.Files) != 0 || l.Config.Sandbox.Privileged {
		t.Fatalf("a config file in the working directory was read: %v", l.Files)
	}
}

func TestListParsing(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"a", []string{"a"}},
		{"a,b", []string{"a", "b"}},
		{" a , b ", []string{"a", "b"}},
		{"a,,b,", []string{"a", "b"}},
		{",", []string{}},
		{"  ", []string{}},
		{"", []string{}},
	}
	for _, tc := range cases {
		if got := ParseList(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseList(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
	// Through Load: "," clears a list that the file set.
	opts, dir := hermetic(t)
	opts.ConfigPath = writeFile(t, filepath.Join(dir, "c.toml"), "[creds]\nexclude = [\"x\"]\n")
	opts.Environ = []string{"PODBOT_CREDS_EXCLUDE=,"}
	if l := mustLoad(t, opts); len(l.Config.Creds.Exclude) != 0 {
		t.Errorf("exclude = %v, want empty", l.Config.Creds.Exclude)
	}
}

func TestUnknownEnvWarns(t *testing.T) {
	opts, _ := hermetic(t)
	opts.Environ = []string{"PODBOT_SANDBOX_PRIVILEGD=secretvalue", "PODBOT_CONFIG_PATH=", "OTHER=1"}
	l := mustLoad(t, opts)
	if len(l.Warnings) != 1 {
		t.Fatalf("Warnings = %v, want one", l.Warnings)
	}
	w := l.Warnings[0]
	if !strings.Contains(w, "PODBOT_SANDBOX_PRIVILEGD") || !strings.Contains(w, "PODBOT_SANDBOX_PRIVILEGED") {
		t.Errorf("warning %q should name the variable and suggest the right one", w)
	}
	if strings.Contains(w, "secretvalue") {
		t.Errorf("warning leaks the value: %q", w)
	}
}

// configErr asserts err is a ConfigError with the given key, reason and
// text fragments, and returns it.
func configErr(t *testing.T, err error, key string, reason error, fragments ...string) *errdefs.ConfigError {
	t.Helper()
	if err == nil {
		t.Fatalf("want error for %s, got nil", key)
	}
	if !errors.Is(err, errdefs.ErrConfig) || !errors.Is(err, reason) {
		t.Fatalf("error %v: want class config and reason %v", err, reason)
	}
	var ce *errdefs.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *ConfigError", err)
	}
	if ce.Key != key {
		t.Errorf("key = %q, want %q (error %v)", ce.Key, key, err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not contain %q", err.Error(), f)
		}
	}
	return ce
}

func TestBadInput(t *testing.T) {
	cases := []struct {
		name      string
		file      string
		env       []string
		flags     map[string]string
		key       string
		reason    error
		fragments []string
	}{
		{name: "env bool maybe", env: []string{"PODBOT_SANDBOX_PRIVILEGED=maybe"}, key: "sandbox.privileged",
			reason: errdefs.ErrInvalidValue, fragments: []string{"PODBOT_SANDBOX_PRIVILEGED", `"maybe"`, "true or false"}},
		{name: "env bool 1", env: []string{"PODBOT_SANDBOX_MOUNT_DEV_FUSE=1"}, key: "sandbox.mount_dev_fuse", reason: errdefs.ErrInvalidValue},
		{name: "env id non-numeric", env: []string{"PODBOT_GITHUB_APP_ID=abc"}, key: "github.app_id",
			reason: errdefs.ErrInvalidValue, fragments: []string{"PODBOT_GITHUB_APP_ID", "numeric id"}},
		{name: "env id negative", env: []string{"PODBOT_GITHUB_INSTALLATION_ID=-5"}, key: "github.installation_id",
			reason: errdefs.ErrInvalidValue, fragments: []string{"negative"}},
		{name: "env id huge", env: []string{"PODBOT_GITHUB_APP_ID=99999999999999999999"}, key: "github.app_id", reason: errdefs.ErrInvalidValue},
		{name: "env size", env: []string{"PODBOT_SANDBOX_MEMORY=4x"}, key: "sandbox.memory", reason: errdefs.ErrInvalidValue, fragments: []string{"unit"}},
		{name: "env duration", env: []string{"PODBOT_TOOLS_IDLE_TIMEOUT=soon"}, key: "tools.idle_timeout", reason: errdefs.ErrInvalidValue, fragments: []string{"duration"}},
		{name: "env float", env: []string{"PODBOT_SANDBOX_CPUS=NaN"}, key: "sandbox.cpus", reason: errdefs.ErrInvalidValue},
		{name: "flag bool", flags: map[string]string{"sandbox.privileged": "yes"}, key: "sandbox.privileged", reason: errdefs.ErrInvalidValue, fragments: []string{"--flag"}},
		{name: "flag unknown key", flags: map[string]string{"sandbox.privilegd": "true"}, key: "sandbox.privilegd", reason: errdefs.ErrUnknownKey, fragments: []string{"did you mean sandbox.privileged"}},
		{name: "file unknown key", file: "[sandbox]\nprivilegd = true\n", key: "sandbox.privilegd",
			reason: errdefs.ErrUnknownKey, fragments: []string{"did you mean sandbox.privileged", "c.toml:2"}},
		{name: "file unknown section", file: "image = \"x\"\n\n[sandboxx]\nmemory = \"1g\"\n", key: "sandboxx.memory",
			reason: errdefs.ErrUnknownKey, fragments: []string{"did you mean sandbox.memory", "c.toml:4"}},
		{name: "file key without section", file: "privileged = true\n", key: "privileged",
			reason: errdefs.ErrUnknownKey, fragments: []string{"did you mean sandbox.privileged"}},
		{name: "file section as value", file: "sandbox = true\n", key: "sandbox", reason: errdefs.ErrUnknownKey, fragments: []string{"section"}},
		{name: "file value as table", file: "[sandbox.privileged]\nx = 1\n", key: "sandbox.privileged.x", reason: errdefs.ErrUnknownKey, fragments: []string{"takes a value"}},
		{name: "file nothing close", file: "zzzzzzzzzzzz = 1\n", key: "zzzzzzzzzzzz", reason: errdefs.ErrUnknownKey},
		{name: "file wrong type bool", file: "[sandbox]\nprivileged = \"yes\"\n", key: "sandbox.privileged",
			reason: errdefs.ErrInvalidValue, fragments: []string{"c.toml:2", "true or false"}},
		{name: "file id as string", file: "[github]\napp_id = \"12\"\n", key: "github.app_id",
			reason: errdefs.ErrInvalidValue, fragments: []string{"numeric id"}},
		{name: "file negative id", file: "[github]\ninstallation_id = -3\n", key: "github.installation_id",
			reason: errdefs.ErrInvalidValue, fragments: []string{"non-negative"}},
		{name: "file string as list", file: "[agent]\nargs = \"acp\"\n", key: "agent.args", reason: errdefs.ErrInvalidValue, fragments: []string{"array of strings"}},
		{name: "file list of ints", file: "[agent]\nargs = [1]\n", key: "agent.args", reason: errdefs.ErrInvalidValue},
		{name: "file bad size", file: "[sandbox]\nmemory = \"lots\"\n", key: "sandbox.memory", reason: errdefs.ErrInvalidValue},
		{name: "file int duration", file: "[tools]\nidle_timeout = 60\n", key: "tools.idle_timeout", reason: errdefs.ErrInvalidValue, fragments: []string{"duration string"}},
		{name: "malformed toml", file: "image = \"x\"\n[sandbox\nprivileged = true\n", key: "",
			reason: errdefs.ErrParse, fragments: []string{"line 2"}},
		{name: "malformed toml value", file: "\n\n[agent]\nkind = claude\n", key: "", reason: errdefs.ErrParse, fragments: []string{"line 4"}},
		{name: "duplicate key", file: "image = \"a\"\nimage = \"b\"\n", key: "image", reason: errdefs.ErrParse, fragments: []string{"line 2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts, dir := hermetic(t)
			if tc.file != "" {
				opts.ConfigPath = writeFile(t, filepath.Join(dir, "c.toml"), tc.file)
			}
			opts.Environ = tc.env
			opts.Flags = tc.flags
			_, err := Load(opts)
			configErr(t, err, tc.key, tc.reason, tc.fragments...)
		})
	}
}

func TestExplicitFileProblems(t *testing.T) {
	opts, dir := hermetic(t)
	opts.ConfigPath = filepath.Join(dir, "missing.toml")
	_, err := Load(opts)
	ce := configErr(t, err, "", errdefs.ErrInvalidValue, "missing.toml", "does not exist")
	if ce.Source != "--config" {
		t.Errorf("source = %q, want --config", ce.Source)
	}

	opts.ConfigPath = ""
	opts.Environ = []string{"PODBOT_CONFIG_PATH=" + filepath.Join(dir, "nope.toml")}
	_, err = Load(opts)
	ce = configErr(t, err, "", errdefs.ErrInvalidValue, "nope.toml")
	if ce.Source != "PODBOT_CONFIG_PATH" {
		t.Errorf("source = %q, want PODBOT_CONFIG_PATH", ce.Source)
	}

	opts.Environ = nil
	opts.ConfigPath = dir
	_, err = Load(opts)
	configErr(t, err, "", errdefs.ErrInvalidValue, "not a regular file")

	big := writeFile(t, filepath.Join(dir, "big.toml"), "# "+strings.Repeat("x", maxFileBytes)+"\n")
	opts.ConfigPath = big
	_, err = Load(opts)
	configErr(t, err, "", errdefs.ErrInvalidValue, "larger than")
}

func TestValidationErrorCarriesSource(t *testing.T) {
	opts, dir := hermetic(t)
	file := writeFile(t, filepath.Join(dir, "c.toml"), "[sandbox]\nselinux_label_mode = \"off\"\n")
	opts.ConfigPath = file
	_, err := Load(opts)
	ce := configErr(t, err, "sandbox.selinux_label_mode", errdefs.ErrInvalidValue, "keep_default")
	if ce.Source != file+":2" {
		t.Errorf("source = %q, want %q (with the line)", ce.Source, file+":2")
	}
	opts.ConfigPath = ""
	opts.Environ = []string{"PODBOT_AGENT_KIND=custom"}
	_, err = Load(opts)
	ce = configErr(t, err, "agent.command", errdefs.ErrMissingRequired)
	if ce.Source != SourceDefault {
		t.Errorf("source = %q, want default", ce.Source)
	}
}

// Legacy files predate workspace.source and the hosting modes; they must
// load unchanged.
func TestCompatibilityFiles(t *testing.T) {
	cases := []struct {
		name  string
		file  string
		check func(t *testing.T, c Config)
	}{
		{"legacy", "[workspace]\nbase_dir = \"/src\"\n\n[agent]\nmode = \"podbot\"\n", func(t *testing.T, c Config) {
			if c.Workspace.BaseDir != "/src" || c.Workspace.Source != SourceGitHubClone || c.Agent.Kind != KindClaude {
				t.Errorf("legacy: %+v %+v", c.Workspace, c.Agent)
			}
			if c.Agent.Hosted() {
				t.Error("legacy config is hosted")
			}
		}},
		{"legacy full", `engine_socket = "unix:///run/user/1000/podman/podman.sock"
image = "ghcr.io/example/podbot-sandbox:latest"
[github]
app_id = 12345
installation_id = 67890
private_key_path = "/home/user/.config/podbot/github-app.pem"
[workspace]
base_dir = "/work"
[creds]
copy_claude = true
copy_codex = false
[sandbox]
privileged = false
mount_dev_fuse = true
[agent]
kind = "codex"
mode = "podbot"
env_allowlist = ["OPENAI_API_KEY"]
`, func(t *testing.T, c Config) {
			if c.GitHub.AppID != 12345 || c.GitHub.InstallationID != 67890 || !c.Sandbox.MountDevFuse || c.Creds.CopyCodex {
				t.Errorf("legacy full: %+v", c)
			}
		}},
		{"hosting codex app server", `[workspace]
source = "host_mount"
host_path = "/abs/path/to/project"
container_path = "/workspace/project"
allowed_roots = ["/abs/path"]
[agent]
kind = "codex"
mode = "codex_app_server"
`, func(t *testing.T, c Config) {
			if !c.Agent.Hosted() || c.Workspace.HostPath != "/abs/path/to/project" {
				t.Errorf("hosting: %+v", c)
			}
		}},
		{"hosting custom acp", `[agent]
kind = "custom"
mode = "acp"
command = "opencode"
args = ["acp"]
env_allowlist = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "FACTORY_API_KEY"]
env_required = ["OPENAI_API_KEY"]
allow_host_delegation = false
allow_terminal_auth = true
[acp]
max_frame_bytes = "16m"
`, func(t *testing.T, c Config) {
			if c.Agent.Command != "opencode" || c.ACP.MaxFrameBytes != 16*MiB || c.Agent.Mode != ModeACP || !c.Agent.AllowTerminalAuth {
				t.Errorf("custom acp: %+v", c)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts, dir := hermetic(t)
			opts.ConfigPath = writeFile(t, filepath.Join(dir, "c.toml"), tc.file)
			l := mustLoad(t, opts)
			tc.check(t, l.Config)
		})
	}
}

func TestLoadedValidateFor(t *testing.T) {
	opts, _ := hermetic(t)
	opts.Environ = []string{"PODBOT_AGENT_KIND=codex", "PODBOT_AGENT_MODE=codex_app_server"}
	l := mustLoad(t, opts)
	ce := configErr(t, l.ValidateFor("run"), "agent.mode", errdefs.ErrConflict, "podbot host")
	if ce.Source != "PODBOT_AGENT_MODE" {
		t.Errorf("source = %q", ce.Source)
	}
	if err := l.ValidateFor("host"); err != nil {
		t.Errorf("host: %v", err)
	}
}

func TestEffective(t *testing.T) {
	opts, _ := hermetic(t)
	opts.Environ = []string{"PODBOT_ENGINE_SOCKET=https://user:hunter2@engine.example:2376/", "PODBOT_SANDBOX_MEMORY=512m"}
	l := mustLoad(t, opts)
	entries := l.Effective()
	if len(entries) != len(Keys()) {
		t.Fatalf("%d entries, want %d", len(entries), len(Keys()))
	}
	byKey := map[string]Entry{}
	for _, e := range entries {
		byKey[e.Key] = e
	}
	sock := byKey["engine_socket"]
	if strings.Contains(sock.Text, "hunter2") || strings.Contains(sock.Value.(string), "hunter2") {
		t.Errorf("engine_socket password shown: %+v", sock)
	}
	if sock.Text != "https://user:[redacted]@engine.example:2376/" || sock.Source != "PODBOT_ENGINE_SOCKET" {
		t.Errorf("engine_socket entry = %+v", sock)
	}
	if m := byKey["sandbox.memory"]; m.Value != "512m" || m.Source != "PODBOT_SANDBOX_MEMORY" {
		t.Errorf("memory entry = %+v", m)
	}
	if p := byKey["sandbox.privileged"]; p.Value != false || p.Text != "false" || p.Source != SourceDefault {
		t.Errorf("privileged entry = %+v", p)
	}
	if e := byKey["tools.idle_timeout"]; e.Value != "15m0s" {
		t.Errorf("idle entry = %+v", e)
	}

	// Secret keys are redacted whatever their value.
	defs := []keyDef{{key: "github.private_key_path", typ: TypeString, secret: true, def: "", field: func(c *Config) any { return &c.GitHub.PrivateKeyPath }}}
	c := Config{GitHub: GitHub{PrivateKeyPath: "/k.pem"}}
	got := effective(defs, &c, nil)
	if got[0].Value != Redacted || got[0].Text != Redacted || got[0].Source != SourceDefault {
		t.Errorf("secret entry = %+v", got[0])
	}
	// The real table does not treat the key path as a secret.
	for _, k := range Keys() {
		if k.Key == "github.private_key_path" && k.Secret {
			t.Error("private_key_path marked secret")
		}
	}
}

func TestRedactURL(t *testing.T) {
	cases := map[string]string{
		"unix:///run/podman.sock":         "unix:///run/podman.sock",
		"ssh://core@host:22/run/p.sock":   "ssh://core@host:22/run/p.sock",
		"ssh://core:pw@host/run/p.sock":   "ssh://core:[redacted]@host/run/p.sock",
		"tcp://a:b:c@host":                "tcp://a:[redacted]@host",
		"https://host/path@x:y":           "https://host/path@x:y",
		"plain string with : and @ in it": "plain string with : and @ in it",
	}
	for in, want := range cases {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidateForFillsEverySource(t *testing.T) {
	opts, _ := hermetic(t)
	opts.Environ = []string{"PODBOT_AGENT_KIND=codex", "PODBOT_AGENT_MODE=codex_app_server"}
	l := mustLoad(t, opts)
	l.Config.Sandbox.SELinuxLabelMode = "bogus" // a second, nested problem
	err := l.ValidateFor("run")
	var sources []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, inner := range j.Unwrap() {
				walk(inner)
			}
			return
		}
		var ce *errdefs.ConfigError
		if errors.As(e, &ce) {
			sources = append(sources, ce.Key+"="+ce.Source)
		}
	}
	walk(err)
	want := []string{"sandbox.selinux_label_mode=default", "agent.mode=PODBOT_AGENT_MODE"}
	if !reflect.DeepEqual(sources, want) {
		t.Errorf("sources = %v, want %v", sources, want)
	}
}

// TestLoadedSearched: Searched names every file that decides the
// configuration, so a caller can keep them out of the sandbox's reach.
func TestLoadedSearched(t *testing.T) {
	opts, dir := hermetic(t)
	xdg := filepath.Join(dir, "xdg", "podbot", "config.toml")
	home := filepath.Join(dir, "home", ".config", "podbot", "config.toml")
	sys := filepath.Join(dir, "etc", "podbot", "config.toml")
	if got := mustLoad(t, opts).Searched; !reflect.DeepEqual(got, []string{xdg, home, sys}) {
		t.Errorf("no file: Searched = %v, want every default location", got)
	}
	writeFile(t, home, "")
	if got := mustLoad(t, opts).Searched; !reflect.DeepEqual(got, []string{xdg, home}) {
		t.Errorf("home file: Searched = %v, want the locations up to the one read", got)
	}
	envFile := writeFile(t, filepath.Join(dir, "env.toml"), "")
	opts.Environ = []string{"PODBOT_CONFIG_PATH=" + envFile}
	if got := mustLoad(t, opts).Searched; !reflect.DeepEqual(got, []string{envFile}) {
		t.Errorf("PODBOT_CONFIG_PATH: Searched = %v", got)
	}
	flagFile := writeFile(t, filepath.Join(dir, "flag.toml"), "")
	opts.ConfigPath = flagFile
	if got := mustLoad(t, opts).Searched; !reflect.DeepEqual(got, []string{flagFile}) {
		t.Errorf("--config: Searched = %v", got)
	}
}
