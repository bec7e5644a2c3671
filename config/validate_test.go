package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestKindModePairs(t *testing.T) {
	modes := []string{ModePodbot, ModeACP, ModeCodexAppServer}
	legal := map[string][]string{
		KindClaude: {ModePodbot},
		KindCodex:  {ModePodbot, ModeCodexAppServer},
		KindCustom: {ModePodbot, ModeACP, ModeCodexAppServer},
	}
	for kind, ok := range legal {
		for _, mode := range modes {
			c := Default()
			c.Agent.Kind, c.Agent.Mode = kind, mode
			if kind == KindCustom {
				c.Agent.Command = "agent-bin"
			}
			err := c.Validate()
			want := false
			for _, m := range ok {
				want = want || m == mode
			}
			if want && err != nil {
				t.Errorf("(%s, %s) should be legal: %v", kind, mode, err)
			}
			if !want {
				configErr(t, err, "agent.mode", errdefs.ErrConflict, kind, mode)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *Config)
		key    string
		reason error
	}{
		{"empty image", func(c *Config) { c.Image = "  " }, "image", errdefs.ErrMissingRequired},
		{"unknown kind", func(c *Config) { c.Agent.Kind = "aider" }, "agent.kind", errdefs.ErrInvalidValue},
		{"unknown mode", func(c *Config) { c.Agent.Mode = "server" }, "agent.mode", errdefs.ErrInvalidValue},
		{"acp kind interactive", func(c *Config) { c.Agent.Kind = "opencode" }, "agent.mode", errdefs.ErrConflict},
		{"acp kind with command", func(c *Config) { c.Agent.Kind, c.Agent.Mode, c.Agent.Command = "gemini", ModeACP, "gemini" }, "agent.command", errdefs.ErrConflict},
		{"endpoint on claude", func(c *Config) { c.Agent.ModelEndpoint = "http://10.0.0.1:4010/v1" }, "agent.model_endpoint", errdefs.ErrConflict},
		{"endpoint on droid", func(c *Config) {
			c.Agent.Kind, c.Agent.Mode, c.Agent.ModelEndpoint = "droid", ModeACP, "http://10.0.0.1:4010/v1"
		}, "agent.model_endpoint", errdefs.ErrInvalidValue},
		{"endpoint with credentials", func(c *Config) {
			c.Agent.Kind, c.Agent.Mode, c.Agent.ModelEndpoint = "opencode", ModeACP, "https://user:key@models.example/v1"
		}, "agent.model_endpoint", errdefs.ErrInvalidValue},
		{"endpoint file scheme", func(c *Config) {
			c.Agent.Kind, c.Agent.Mode, c.Agent.ModelEndpoint = "gemini", ModeACP, "file:///etc/passwd"
		}, "agent.model_endpoint", errdefs.ErrInvalidValue},
		{"endpoint with query", func(c *Config) {
			c.Agent.Kind, c.Agent.Mode, c.Agent.ModelEndpoint = "goose", ModeACP, "https://models.example/v1?key=x"
		}, "agent.model_endpoint", errdefs.ErrInvalidValue},
		{"http endpoint tunnelled", func(c *Config) {
			c.Agent.Kind, c.Agent.Mode, c.Agent.ModelEndpoint = "claude-acp", ModeACP, "http://10.0.0.1:4010"
		}, "agent.model_endpoint", errdefs.ErrConflict},
		{"model without endpoint", func(c *Config) { c.Agent.Kind, c.Agent.Mode, c.Agent.Model = "gemini", ModeACP, "m" }, "agent.model", errdefs.ErrConflict},
		{"model with quote", func(c *Config) {
			c.Agent.Kind, c.Agent.Mode, c.Agent.ModelEndpoint, c.Agent.Model = "gemini", ModeACP, "http://h/v1", `m"`
		}, "agent.model", errdefs.ErrInvalidValue},
		{"custom without command", func(c *Config) { c.Agent.Kind = KindCustom }, "agent.command", errdefs.ErrMissingRequired},
		{"custom command with spaces", func(c *Config) { c.Agent.Kind, c.Agent.Command = KindCustom, "opencode acp" }, "agent.command", errdefs.ErrInvalidValue},
		{"built-in with command", func(c *Config) { c.Agent.Command = "claude" }, "agent.command", errdefs.ErrConflict},
		{"built-in with args", func(c *Config) { c.Agent.Kind, c.Agent.Args = KindCodex, []string{"x"} }, "agent.args", errdefs.ErrConflict},
		{"bad env name", func(c *Config) { c.Agent.EnvAllowlist = []string{"A-B"} }, "agent.env_allowlist", errdefs.ErrInvalidValue},
		{"engine env refused", func(c *Config) { c.Agent.EnvAllowlist = []string{"DOCKER_HOST"} }, "agent.env_allowlist", errdefs.ErrInvalidValue},
		{"required not allowlisted", func(c *Config) { c.Agent.EnvRequired = []string{"KEY"} }, "agent.env_required", errdefs.ErrConflict},
		{"host_mount without path", func(c *Config) {
			c.Workspace.Source, c.Workspace.AllowedRoots = SourceHostMount, []string{"/src"}
		}, "workspace.host_path", errdefs.ErrMissingRequired},
		{"host_mount relative path", func(c *Config) {
			c.Workspace.Source, c.Workspace.HostPath, c.Workspace.AllowedRoots = SourceHostMount, "proj", []string{"/src"}
		}, "workspace.host_path", errdefs.ErrInvalidValue},
		{"host_mount without roots", func(c *Config) {
			c.Workspace.Source, c.Workspace.HostPath = SourceHostMount, "/src/p"
		}, "workspace.allowed_roots", errdefs.ErrMissingRequired},
		{"root slash", func(c *Config) {
			c.Workspace.Source, c.Workspace.HostPath, c.Workspace.AllowedRoots = SourceHostMount, "/src/p", []string{"/"}
		}, "workspace.allowed_roots", errdefs.ErrInvalidValue},
		{"github_clone with host_path", func(c *Config) { c.Workspace.HostPath = "/src/p" }, "workspace.host_path", errdefs.ErrConflict},
		{"unknown source", func(c *Config) { c.Workspace.Source = "s3" }, "workspace.source", errdefs.ErrInvalidValue},
		{"container_path relative", func(c *Config) { c.Workspace.ContainerPath = "workspace" }, "workspace.container_path", errdefs.ErrInvalidValue},
		{"container_path root", func(c *Config) { c.Workspace.ContainerPath = "/" }, "workspace.container_path", errdefs.ErrInvalidValue},
		{"container_path dotdot", func(c *Config) { c.Workspace.ContainerPath = "/w/../etc" }, "workspace.container_path", errdefs.ErrInvalidValue},
		{"base_dir root", func(c *Config) { c.Workspace.BaseDir = "/" }, "workspace.base_dir", errdefs.ErrInvalidValue},
		{"selinux", func(c *Config) { c.Sandbox.SELinuxLabelMode = "enforce" }, "sandbox.selinux_label_mode", errdefs.ErrInvalidValue},
		{"host network", func(c *Config) { c.Sandbox.Network = "host" }, "sandbox.network", errdefs.ErrInvalidValue},
		{"container network", func(c *Config) { c.Sandbox.Network = "container:abc" }, "sandbox.network", errdefs.ErrInvalidValue},
		{"tools network", func(c *Config) { c.Tools.Network = "host" }, "tools.network", errdefs.ErrInvalidValue},
		{"tiny memory", func(c *Config) { c.Sandbox.Memory = 1024 }, "sandbox.memory", errdefs.ErrInvalidValue},
		{"negative pids", func(c *Config) { c.Sandbox.PidsLimit = -1 }, "sandbox.pids_limit", errdefs.ErrInvalidValue},
		{"cpus", func(c *Config) { c.Tools.CPUs = 5000 }, "tools.cpus", errdefs.ErrInvalidValue},
		{"cpuset word", func(c *Config) { c.Tools.CPUSet = "all" }, "tools.cpuset", errdefs.ErrInvalidValue},
		{"cpuset empty", func(c *Config) { c.Tools.CPUSet = "" }, "tools.cpuset", errdefs.ErrInvalidValue},
		{"cpuset spaces", func(c *Config) { c.Tools.CPUSet = "0, 1" }, "tools.cpuset", errdefs.ErrInvalidValue},
		{"gpu name", func(c *Config) { c.Sandbox.GPUs = []string{"all"} }, "sandbox.gpus", errdefs.ErrInvalidValue},
		{"user", func(c *Config) { c.Sandbox.User = "root; rm" }, "sandbox.user", errdefs.ErrInvalidValue},
		{"frame too small", func(c *Config) { c.ACP.MaxFrameBytes = 10 }, "acp.max_frame_bytes", errdefs.ErrInvalidValue},
		{"shell timeout", func(c *Config) { c.Tools.ShellTimeout = 0 }, "tools.shell_timeout", errdefs.ErrInvalidValue},
		{"workspace root relative", func(c *Config) { c.Tools.WorkspaceRoot = "cache" }, "tools.workspace_root", errdefs.ErrInvalidValue},
		{"tools roots relative", func(c *Config) { c.Tools.AllowedHostRoots = []string{"src"} }, "tools.allowed_host_roots", errdefs.ErrInvalidValue},
		{"github partial", func(c *Config) { c.GitHub.AppID = 1 }, "github.installation_id", errdefs.ErrMissingRequired},
		{"github negative", func(c *Config) { c.GitHub.AppID = -1 }, "github.app_id", errdefs.ErrInvalidValue},
		{"github key relative", func(c *Config) {
			c.GitHub.AppID, c.GitHub.InstallationID, c.GitHub.PrivateKeyPath = 1, 2, "key.pem"
		}, "github.private_key_path", errdefs.ErrInvalidValue},
		{"api url scheme", func(c *Config) { c.GitHub.APIURL = "ftp://x" }, "github.api_url", errdefs.ErrInvalidValue},
		{"clone url credentials", func(c *Config) { c.GitHub.CloneBaseURL = "https://u:p@github.com/" }, "github.clone_base_url", errdefs.ErrInvalidValue},
		{"refresh buffer", func(c *Config) { c.GitHub.TokenRefreshBuffer = 0 }, "github.token_refresh_buffer", errdefs.ErrInvalidValue},
		{"exclude absolute", func(c *Config) { c.Creds.Exclude = []string{"/etc"} }, "creds.exclude", errdefs.ErrInvalidValue},
		{"exclude bad glob", func(c *Config) { c.Creds.Exclude = []string{"[a"} }, "creds.exclude", errdefs.ErrInvalidValue},
		{"network mode", func(c *Config) { c.Network.Mode = "closed" }, "network.mode", errdefs.ErrInvalidValue},
		{"network mode case", func(c *Config) { c.Network.Mode = "Open" }, "network.mode", errdefs.ErrInvalidValue},
		{"empty network mode", func(c *Config) { c.Network.Mode = "" }, "network.mode", errdefs.ErrInvalidValue},
		{"bad allow rule", func(c *Config) { c.Network.Allow = []string{"example.com", "https://evil.example/"} }, "network.allow", errdefs.ErrInvalidValue},
		{"wildcard tld", func(c *Config) { c.Network.Allow = []string{"*.com"} }, "network.allow", errdefs.ErrInvalidValue},
		{"bad port", func(c *Config) { c.Network.Allow = []string{"example.com:99999"} }, "network.allow", errdefs.ErrInvalidValue},
		{"unknown preset", func(c *Config) { c.Network.Presets = []string{"agent", "everything"} }, "network.presets", errdefs.ErrInvalidValue},
		{"bad pin", func(c *Config) { c.Network.Resolve = []string{"example.com"} }, "network.resolve", errdefs.ErrInvalidValue},
		{"pin to a name", func(c *Config) { c.Network.Resolve = []string{"example.com=other.example"} }, "network.resolve", errdefs.ErrInvalidValue},
		{"pin twice", func(c *Config) { c.Network.Resolve = []string{"a.example=127.0.0.1", "A.example=127.0.0.2"} }, "network.resolve", errdefs.ErrConflict},
		{"relative upstream ca", func(c *Config) { c.Network.UpstreamCA = "ca.pem" }, "network.upstream_ca", errdefs.ErrInvalidValue},
		{"bridge under allowlist", func(c *Config) { c.Sandbox.Network = "bridge" }, "sandbox.network", errdefs.ErrConflict},
		{"named network under none", func(c *Config) { c.Sandbox.Network, c.Network.Mode = "corp", NetworkNone }, "sandbox.network", errdefs.ErrConflict},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.mutate(&c)
			configErr(t, c.Validate(), tc.key, tc.reason, tc.key)
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	cases := map[string]func(c *Config){
		"named network": func(c *Config) { c.Sandbox.Network, c.Network.Mode = "podbot-net", NetworkOpen },
		"no network":    func(c *Config) { c.Sandbox.Network = "none" },
		"egress rules": func(c *Config) {
			c.Network.Allow = []string{"example.com", "*.example.org:8443", "10.0.0.1", "[2001:db8::1]:443"}
			c.Network.Resolve = []string{"example.com=127.0.0.1:8443", "example.com=127.0.0.1:8443"}
			c.Network.Presets, c.Network.UpstreamCA = []string{}, "/etc/ssl/corp.pem"
		},
		"mode none":       func(c *Config) { c.Network.Mode = NetworkNone },
		"numeric user":    func(c *Config) { c.Sandbox.User = "1000:1000" },
		"cdi gpu":         func(c *Config) { c.Sandbox.GPUs = []string{"nvidia.com/gpu=all", "nvidia.com/gpu=0"} },
		"no limits":       func(c *Config) { c.Sandbox.Memory, c.Sandbox.CPUs, c.Sandbox.PidsLimit = 0, 0, 0 },
		"full github app": func(c *Config) { c.GitHub.AppID, c.GitHub.InstallationID, c.GitHub.PrivateKeyPath = 1, 2, "/k.pem" },
		"enterprise api":  func(c *Config) { c.GitHub.APIURL = "https://ghe.example.com/api/v3" },
		"required listed": func(c *Config) { c.Agent.EnvAllowlist, c.Agent.EnvRequired = []string{"K"}, []string{"K"} },
		"host mount": func(c *Config) {
			c.Workspace.Source, c.Workspace.HostPath, c.Workspace.AllowedRoots = SourceHostMount, "/src/p", []string{"/src"}
		},
	}
	for name, mutate := range cases {
		c := Default()
		mutate(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestValidateReportsAll(t *testing.T) {
	c := Default()
	c.Image = ""
	c.Sandbox.SELinuxLabelMode = "x"
	err := c.Validate()
	var keys []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *errdefs.ConfigError
		if errors.As(e, &ce) {
			keys = append(keys, ce.Key)
		}
	}
	if len(keys) != 2 || keys[0] != "image" || keys[1] != "sandbox.selinux_label_mode" {
		t.Errorf("keys = %v", keys)
	}
}

func TestValidateFor(t *testing.T) {
	hosted := Default()
	hosted.Agent.Kind, hosted.Agent.Mode = KindCodex, ModeCodexAppServer
	cases := []struct {
		name    string
		c       Config
		command string
		wantErr bool
	}{
		{"run interactive", Default(), "run", false},
		{"run hosted", hosted, "run", true},
		{"host hosted", hosted, "host", false},
		{"host interactive", Default(), "host", true},
		{"other command", hosted, "ps", false},
	}
	for _, tc := range cases {
		err := tc.c.ValidateFor(tc.command)
		if !tc.wantErr {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		configErr(t, err, "agent.mode", errdefs.ErrConflict, "agent.mode")
	}
}

func TestNearestKey(t *testing.T) {
	known := []string{"image", "sandbox.privileged", "sandbox.pids_limit", "agent.kind"}
	cases := map[string]string{
		"imag":               "image",
		"sandbox.privilegd":  "sandbox.privileged",
		"sandbox.pid_limit":  "sandbox.pids_limit",
		"privileged":         "sandbox.privileged",
		"Agent.Kind":         "agent.kind",
		"completely.unknown": "",
	}
	for in, want := range cases {
		if got := nearestKey(in, known); got != want {
			t.Errorf("nearestKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidateTokenPermissions(t *testing.T) {
	for name, perms := range map[string]map[string]string{
		"empty":      {},
		"bad level":  {"contents": "admin"},
		"upper name": {"Contents": "write"},
		"dotted":     {"contents.level": "write"},
	} {
		c := Default()
		c.GitHub.TokenPermissions = perms
		err := c.Validate()
		var ce *errdefs.ConfigError
		if !errors.As(err, &ce) || ce.Key != "github.token_permissions" {
			t.Errorf("%s: Validate = %v; want a github.token_permissions error", name, err)
		}
	}
}

func TestValidateBackendAndKubernetes(t *testing.T) {
	c := Default()
	if c.Sandbox.Backend != BackendEngine {
		t.Fatalf("default backend %q", c.Sandbox.Backend)
	}
	c.Sandbox.Backend = BackendKubernetes
	c.Kubernetes = Kubernetes{Kubeconfig: "/etc/kube/config", Namespace: "agents", RuntimeClass: "gvisor",
		ImagePullPolicy: "IfNotPresent", ServiceAccount: "sandbox"}
	if err := c.Validate(); err != nil {
		t.Fatalf("valid kubernetes config: %v", err)
	}
	for key, mut := range map[string]func(*Config){
		"sandbox.backend":              func(c *Config) { c.Sandbox.Backend = "k8s" },
		"kubernetes.namespace":         func(c *Config) { c.Kubernetes.Namespace = "Agents_1" },
		"kubernetes.runtime_class":     func(c *Config) { c.Kubernetes.RuntimeClass = "g visor" },
		"kubernetes.service_account":   func(c *Config) { c.Kubernetes.ServiceAccount = "../sa" },
		"kubernetes.image_pull_policy": func(c *Config) { c.Kubernetes.ImagePullPolicy = "always" },
		"kubernetes.kubeconfig":        func(c *Config) { c.Kubernetes.Kubeconfig = "relative/config" },
	} {
		bad := c
		mut(&bad)
		err := bad.Validate()
		var ce *errdefs.ConfigError
		if !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("%s: %v", key, err)
		}
	}
}

// TestACPModeOnCLIKindNamesTheAdapter: claude and codex serve ACP only
// through their adapters, which the error names.
func TestACPModeOnCLIKindNamesTheAdapter(t *testing.T) {
	for _, kind := range []string{KindClaude, KindCodex} {
		c := Default()
		c.Agent.Kind, c.Agent.Mode = kind, ModeACP
		err := c.Validate()
		var ce *errdefs.ConfigError
		if !errors.As(err, &ce) || ce.Key != "agent.mode" || !errors.Is(err, errdefs.ErrConflict) ||
			!strings.Contains(err.Error(), "--agent "+kind+"-acp") {
			t.Errorf("kind %s mode acp: %v, want an agent.mode conflict naming --agent %s-acp", kind, err, kind)
		}
	}
}
