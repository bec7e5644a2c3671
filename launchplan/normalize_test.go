package launchplan

import (
	"slices"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func baseRequest(intent Intent, kind AgentKind, mode AgentMode) Request {
	return Request{
		Intent:    intent,
		Agent:     Agent{Kind: kind, Mode: mode},
		Image:     "localhost/podbot-sandbox:0.1.0",
		SessionID: "3f2a1b2c-9d8e-4f00-a1b2-c3d4e5f60718",
		Version:   "0.1.0",
	}
}

func TestNormalizeKindModeIntent(t *testing.T) {
	tests := []struct {
		name     string
		intent   Intent
		kind     AgentKind
		mode     AgentMode
		command  string
		args     []string
		extra    []string
		wantArgv []string
		wantMode AgentMode
		wantKey  string
		wantErr  error
	}{
		{name: "interactive claude default mode", intent: IntentInteractive, kind: KindClaude,
			wantArgv: []string{"claude", "--dangerously-skip-permissions"}, wantMode: ModePodbot},
		{name: "interactive claude podbot + extra", intent: IntentInteractive, kind: KindClaude, mode: ModePodbot, extra: []string{"--model", "opus"},
			wantArgv: []string{"claude", "--dangerously-skip-permissions", "--model", "opus"}, wantMode: ModePodbot},
		{name: "interactive codex", intent: IntentInteractive, kind: KindCodex, mode: ModePodbot,
			wantArgv: []string{"codex", "--dangerously-bypass-approvals-and-sandbox"}, wantMode: ModePodbot},
		{name: "interactive custom", intent: IntentInteractive, kind: KindCustom, command: "aider", args: []string{"--yes"}, extra: []string{"x"},
			wantArgv: []string{"aider", "--yes", "x"}, wantMode: ModePodbot},
		{name: "interactive no agent", intent: IntentInteractive, wantArgv: nil, wantMode: ModeDefault},
		{name: "interactive with hosted mode acp", intent: IntentInteractive, kind: KindCodex, mode: ModeACP,
			wantKey: "agent.mode", wantErr: errdefs.ErrConflict},
		{name: "interactive with hosted mode app server", intent: IntentInteractive, kind: KindCodex, mode: ModeCodexAppServer,
			wantKey: "agent.mode", wantErr: errdefs.ErrConflict},
		{name: "hosting codex app server", intent: IntentHosting, kind: KindCodex, mode: ModeCodexAppServer,
			wantArgv: []string{"codex", "app-server", "--listen", "stdio://"}, wantMode: ModeCodexAppServer},
		{name: "hosting codex acp", intent: IntentHosting, kind: KindCodex, mode: ModeACP,
			wantArgv: []string{"codex-acp"}, wantMode: ModeACP},
		{name: "hosting claude acp", intent: IntentHosting, kind: KindClaude, mode: ModeACP,
			wantArgv: []string{"claude-code-acp"}, wantMode: ModeACP},
		{name: "hosting claude app server unsupported", intent: IntentHosting, kind: KindClaude, mode: ModeCodexAppServer,
			wantKey: "agent.mode", wantErr: errdefs.ErrConflict},
		{name: "hosting custom acp", intent: IntentHosting, kind: KindCustom, mode: ModeACP, command: "opencode", args: []string{"acp"},
			wantArgv: []string{"opencode", "acp"}, wantMode: ModeACP},
		{name: "hosting opencode default mode", intent: IntentHosting, kind: "opencode",
			wantArgv: []string{"opencode", "acp"}, wantMode: ModeACP},
		{name: "hosting gemini acp + extra", intent: IntentHosting, kind: "gemini", mode: ModeACP, extra: []string{"--debug"},
			wantArgv: []string{"gemini", "--acp", "--debug"}, wantMode: ModeACP},
		{name: "hosting goose", intent: IntentHosting, kind: "goose", mode: ModeACP, wantArgv: []string{"goose", "acp"}, wantMode: ModeACP},
		{name: "hosting droid", intent: IntentHosting, kind: "droid", wantArgv: []string{"droid-acp"}, wantMode: ModeACP},
		{name: "hosting claude-acp", intent: IntentHosting, kind: "claude-acp", wantArgv: []string{"claude-code-acp"}, wantMode: ModeACP},
		{name: "hosting codex-acp", intent: IntentHosting, kind: "codex-acp", wantArgv: []string{"codex-acp"}, wantMode: ModeACP},
		{name: "hosting opencode app server", intent: IntentHosting, kind: "opencode", mode: ModeCodexAppServer,
			wantKey: "agent.mode", wantErr: errdefs.ErrConflict},
		{name: "interactive opencode", intent: IntentInteractive, kind: "opencode",
			wantKey: "agent.mode", wantErr: errdefs.ErrConflict},
		{name: "opencode with command", intent: IntentHosting, kind: "opencode", mode: ModeACP, command: "sh",
			wantKey: "agent.command", wantErr: errdefs.ErrConflict},
		{name: "hosting custom app server", intent: IntentHosting, kind: KindCustom, mode: ModeCodexAppServer, command: "my-server",
			wantArgv: []string{"my-server"}, wantMode: ModeCodexAppServer},
		{name: "hosting with podbot mode", intent: IntentHosting, kind: KindCodex, mode: ModePodbot,
			wantKey: "agent.mode", wantErr: errdefs.ErrConflict},
		{name: "hosting without mode", intent: IntentHosting, kind: KindCodex,
			wantKey: "agent.mode", wantErr: errdefs.ErrMissingRequired},
		{name: "hosting without agent", intent: IntentHosting, mode: ModeACP,
			wantKey: "agent.kind", wantErr: errdefs.ErrMissingRequired},
		{name: "tools", intent: IntentTools, wantArgv: nil, wantMode: ModeDefault},
		{name: "tools with an agent", intent: IntentTools, kind: KindClaude,
			wantKey: "agent.kind", wantErr: errdefs.ErrConflict},
		{name: "custom without command", intent: IntentInteractive, kind: KindCustom,
			wantKey: "agent.command", wantErr: errdefs.ErrMissingRequired},
		{name: "builtin with command", intent: IntentInteractive, kind: KindClaude, command: "sh",
			wantKey: "agent.command", wantErr: errdefs.ErrConflict},
		{name: "builtin with args", intent: IntentInteractive, kind: KindCodex, args: []string{"x"},
			wantKey: "agent.command", wantErr: errdefs.ErrConflict},
		{name: "command without kind", intent: IntentInteractive, command: "sh",
			wantKey: "agent.command", wantErr: errdefs.ErrConflict},
		{name: "unknown kind", intent: IntentInteractive, kind: "aider",
			wantKey: "agent.kind", wantErr: errdefs.ErrInvalidValue},
		{name: "unknown mode", intent: IntentHosting, kind: KindCodex, mode: "grpc",
			wantKey: "agent.mode", wantErr: errdefs.ErrInvalidValue},
		{name: "unknown intent", intent: "batch", kind: KindCodex,
			wantKey: "intent", wantErr: errdefs.ErrInvalidValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := baseRequest(tt.intent, tt.kind, tt.mode)
			req.Agent.Command, req.Agent.Args, req.Agent.ExtraArgs = tt.command, tt.args, tt.extra
			p, err := Normalize(req)
			if tt.wantErr != nil {
				wantConfigError(t, err, tt.wantKey, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.AgentCommand, tt.wantArgv) || p.AgentMode != tt.wantMode {
				t.Errorf("argv=%q mode=%q, want %q %q", p.AgentCommand, p.AgentMode, tt.wantArgv, tt.wantMode)
			}
			exec, ok := p.AgentExec()
			if ok != (tt.wantArgv != nil) || (ok && !slices.Equal(exec.Cmd, tt.wantArgv)) {
				t.Errorf("AgentExec = %+v, %v", exec, ok)
			}
			wantTTY := tt.intent == IntentInteractive
			if p.Stream.TTY != wantTTY || exec.Tty != (ok && wantTTY) || p.Stream.ProtocolStdout == wantTTY {
				t.Errorf("stream = %+v for intent %s", p.Stream, tt.intent)
			}
		})
	}
}

func TestNormalizeImage(t *testing.T) {
	for _, img := range []string{"", "   ", "\t\n"} {
		req := baseRequest(IntentInteractive, KindClaude, "")
		req.Image = img
		_, err := Normalize(req)
		wantConfigError(t, err, "image", errdefs.ErrMissingRequired)
	}
	req := baseRequest(IntentInteractive, KindClaude, "")
	req.Image = "a b"
	_, err := Normalize(req)
	wantConfigError(t, err, "image", errdefs.ErrInvalidValue)
	req.Image = "  busybox:latest "
	p, err := Normalize(req)
	if err != nil || p.Image != "busybox:latest" {
		t.Errorf("image = %q, %v", p.Image, err)
	}
}

func TestNormalizeNameAndLabels(t *testing.T) {
	tests := []struct {
		name     string
		intent   Intent
		kind     AgentKind
		mode     AgentMode
		given    string
		wantName string
		wantKind string
	}{
		{name: "claude", intent: IntentInteractive, kind: KindClaude, wantName: "podbot-claude-3f2a1b2c9d8e", wantKind: "claude"},
		{name: "codex hosting", intent: IntentHosting, kind: KindCodex, mode: ModeCodexAppServer, wantName: "podbot-codex-3f2a1b2c9d8e", wantKind: "codex"},
		{name: "tools", intent: IntentTools, wantName: "podbot-tools-3f2a1b2c9d8e", wantKind: "none"},
		{name: "sandbox", intent: IntentInteractive, wantName: "podbot-sandbox-3f2a1b2c9d8e", wantKind: "none"},
		{name: "given", intent: IntentInteractive, given: "my-box.1", wantName: "my-box.1", wantKind: "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := baseRequest(tt.intent, tt.kind, tt.mode)
			req.Name = tt.given
			req.Labels = map[string]string{"team": "infra"}
			p, err := Normalize(req)
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != tt.wantName {
				t.Errorf("Name = %q, want %q", p.Name, tt.wantName)
			}
			want := map[string]string{
				"podbot.managed": "true", "podbot.version": "0.1.0", "podbot.intent": string(tt.intent),
				"podbot.agent.kind": tt.wantKind, "podbot.session": req.SessionID, "team": "infra",
			}
			cfg, _, _ := p.Render()
			for k, v := range want {
				if cfg.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, cfg.Labels[k], v)
				}
			}
		})
	}
	req := baseRequest(IntentInteractive, KindClaude, "")
	req.Name = "bad/name"
	_, err := Normalize(req)
	wantConfigError(t, err, "name", errdefs.ErrInvalidValue)
	req = baseRequest(IntentInteractive, KindClaude, "")
	req.SessionID = ""
	_, err = Normalize(req)
	wantConfigError(t, err, "session", errdefs.ErrInvalidValue)
	req = baseRequest(IntentInteractive, KindClaude, "")
	req.Labels = map[string]string{"podbot.session": "spoofed"}
	_, err = Normalize(req)
	wantConfigError(t, err, "labels", errdefs.ErrRefused)
}

func TestNormalizeAgentDefaults(t *testing.T) {
	req := baseRequest(IntentInteractive, KindClaude, "")
	req.AgentEnv = []string{"ANTHROPIC_API_KEY=k"}
	p, err := Normalize(req)
	if err != nil {
		t.Fatal(err)
	}
	cfg, hc, _ := p.Render()
	if hc.Privileged || !slices.Equal(hc.CapDrop, []string{"ALL"}) || !slices.Equal(hc.CapAdd, DefaultKeptCapabilities()) {
		t.Errorf("privileges: Privileged=%v CapDrop=%v CapAdd=%v", hc.Privileged, hc.CapDrop, hc.CapAdd)
	}
	if !slices.Equal(hc.SecurityOpt, []string{"no-new-privileges", "label=disable"}) {
		t.Errorf("SecurityOpt = %v", hc.SecurityOpt)
	}
	if hc.NetworkMode != "" || hc.ReadonlyRootfs || cfg.User != "" {
		t.Errorf("network=%q readonly=%v user=%q; want engine default, writable, image user", hc.NetworkMode, hc.ReadonlyRootfs, cfg.User)
	}
	if *hc.PidsLimit != AgentPidsLimit || hc.Memory != AgentMemoryBytes || hc.NanoCPUs != AgentNanoCPUs {
		t.Errorf("resources = %d %d %d", *hc.PidsLimit, hc.Memory, hc.NanoCPUs)
	}
	if len(cfg.Env) != 0 || !slices.Equal(cfg.Cmd, DefaultInitCommand()) {
		t.Errorf("env=%v cmd=%v; the allowlisted secret must not reach the container's config", cfg.Env, cfg.Cmd)
	}
	if exec, _ := p.AgentExec(); !slices.Equal(exec.Env, req.AgentEnv) {
		t.Errorf("agent exec env = %v, want %v", exec.Env, req.AgentEnv)
	}
	if len(hc.Mounts) != 0 || len(hc.Devices) != 0 {
		t.Errorf("unexpected mounts/devices: %v %v", hc.Mounts, hc.Devices)
	}
}

func TestNormalizeToolDefaults(t *testing.T) {
	req := baseRequest(IntentTools, KindNone, "")
	req.Workspace = Workspace{Strategy: WorkspaceHostMount, HostPath: "/home/u/.cache/podbot/tools/s1"}
	req.InitCommand = []string{"/usr/local/bin/podbot-sidecar", "init"}
	p, err := Normalize(req)
	if err != nil {
		t.Fatal(err)
	}
	cfg, hc, _ := p.Render()
	if cfg.User != "65534:65534" || hc.NetworkMode != "none" || hc.Memory != 1<<30 || hc.NanoCPUs != 1e9 || !hc.ReadonlyRootfs {
		t.Errorf("tool defaults: user=%q net=%q mem=%d cpus=%d ro=%v", cfg.User, hc.NetworkMode, hc.Memory, hc.NanoCPUs, hc.ReadonlyRootfs)
	}
	if len(hc.CapAdd) != 0 || !slices.Equal(hc.CapDrop, []string{"ALL"}) {
		t.Errorf("tool caps: add=%v drop=%v", hc.CapAdd, hc.CapDrop)
	}
	if len(hc.Mounts) != 1 || hc.Mounts[0].Target != "/workspace" || hc.Mounts[0].ReadOnly || cfg.WorkingDir != "/workspace" {
		t.Errorf("tool mounts = %+v workdir=%q", hc.Mounts, cfg.WorkingDir)
	}
	if !slices.Equal(cfg.Cmd, req.InitCommand) {
		t.Errorf("cmd = %v", cfg.Cmd)
	}
	if p.Stream.TTY || !p.Stream.ProtocolStdout {
		t.Errorf("stream = %+v", p.Stream)
	}
}

func TestNormalizeSandboxOverrides(t *testing.T) {
	no, yes := false, true
	tests := []struct {
		name  string
		sb    Sandbox
		check func(t *testing.T, p Plan)
		key   string
	}{
		{name: "limits and user", sb: Sandbox{PidsLimit: 64, MemoryBytes: 512 << 20, NanoCPUs: 5e8, User: "1000:1000"},
			check: func(t *testing.T, p Plan) {
				if p.Resources != (Resources{PidsLimit: 64, MemoryBytes: 512 << 20, NanoCPUs: 5e8}) || p.User != "1000:1000" {
					t.Errorf("resources=%+v user=%q", p.Resources, p.User)
				}
			}},
		{name: "negative removes limits", sb: Sandbox{PidsLimit: -1, MemoryBytes: -1, NanoCPUs: -1},
			check: func(t *testing.T, p Plan) {
				if p.Resources != (Resources{}) {
					t.Errorf("resources=%+v", p.Resources)
				}
			}},
		{name: "network and read-only", sb: Sandbox{Network: "none", ReadOnlyRootfs: &yes},
			check: func(t *testing.T, p Plan) {
				if p.Network != "none" || !p.Security.ReadOnlyRootfs || p.Tmpfs["/tmp"] == "" {
					t.Errorf("network=%q ro=%v tmpfs=%v", p.Network, p.Security.ReadOnlyRootfs, p.Tmpfs)
				}
			}},
		{name: "explicitly writable", sb: Sandbox{ReadOnlyRootfs: &no},
			check: func(t *testing.T, p Plan) {
				if p.Security.ReadOnlyRootfs {
					t.Error("read-only")
				}
			}},
		{name: "privileged ignores fuse, selinux and cap_add", sb: Sandbox{Privileged: true, MountDevFuse: true, SELinuxLabelMode: "bogus", CapAdd: []string{"SYS_PTRACE"}},
			check: func(t *testing.T, p Plan) {
				s := p.Security
				if !s.Privileged || s.CapDropAll || len(s.CapAdd) != 0 || len(s.Devices) != 0 || s.LabelDisable || !s.NoNewPrivileges {
					t.Errorf("security = %+v", s)
				}
			}},
		{name: "minimal with fuse, keep_default, cap_add", sb: Sandbox{MountDevFuse: true, SELinuxLabelMode: SELinuxKeepDefault, CapAdd: []string{"CAP_SYS_PTRACE"}},
			check: func(t *testing.T, p Plan) {
				s := p.Security
				if s.Privileged || s.LabelDisable || len(s.Devices) != 1 ||
					!slices.Contains(s.CapAdd, "SYS_ADMIN") || !slices.Contains(s.CapAdd, "SYS_PTRACE") || !slices.Contains(s.CapAdd, "CHOWN") {
					t.Errorf("security = %+v", s)
				}
			}},
		{name: "gpus", sb: Sandbox{GPUs: []string{"nvidia.com/gpu=all"}},
			check: func(t *testing.T, p Plan) {
				if !slices.Equal(p.Security.GPUs, []string{"nvidia.com/gpu=all"}) {
					t.Errorf("gpus = %v", p.Security.GPUs)
				}
			}},
		{name: "bad selinux mode", sb: Sandbox{SELinuxLabelMode: "bogus"}, key: "sandbox.selinux_label_mode"},
		{name: "host network", sb: Sandbox{Network: "host"}, key: "sandbox.network"},
		{name: "bad gpu", sb: Sandbox{GPUs: []string{"gpu0"}}, key: "sandbox.gpus"},
		{name: "tiny memory", sb: Sandbox{MemoryBytes: 10}, key: "sandbox.memory"},
		{name: "bad cap", sb: Sandbox{CapAdd: []string{"NOPE"}}, key: "sandbox.cap_add"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := baseRequest(IntentInteractive, KindCodex, "")
			req.Sandbox = tt.sb
			p, err := Normalize(req)
			if tt.key != "" {
				wantConfigError(t, err, tt.key, nil)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, p)
		})
	}
}

func TestNormalizeWorkspace(t *testing.T) {
	tests := []struct {
		name      string
		intent    Intent
		ws        Workspace
		token     string
		sockets   []string
		wantDir   string
		wantCwd   string // container config working dir
		wantMount []Mount
		key       string
		reason    error
	}{
		{name: "none", intent: IntentInteractive},
		{name: "clone into base dir", intent: IntentInteractive, ws: Workspace{Strategy: WorkspaceGitHubClone, BaseDir: "/work"}, wantDir: "/work"},
		{name: "clone into repo dir", intent: IntentInteractive, ws: Workspace{Strategy: WorkspaceGitHubClone, BaseDir: "/work", ContainerPath: "/work/repo"}, wantDir: "/work/repo"},
		{name: "clone with token", intent: IntentHosting, ws: Workspace{Strategy: WorkspaceGitHubClone, BaseDir: "/work"},
			token: "/run/user/1000/podbot/c/ghapp_token", wantDir: "/work",
			wantMount: []Mount{{Source: "/run/user/1000/podbot/c", Target: "/run/secrets", ReadOnly: true, Origin: "token_file"}}},
		{name: "host mount default target", intent: IntentInteractive, ws: Workspace{Strategy: WorkspaceHostMount, HostPath: "/home/u/p", Owner: &HostOwner{UID: 1000, GID: 1000}},
			wantDir: "/workspace", wantCwd: "/workspace",
			wantMount: []Mount{{Source: "/home/u/p", Target: "/workspace", Origin: "workspace.host_path"}}},
		{name: "host mount custom target", intent: IntentInteractive, ws: Workspace{Strategy: WorkspaceHostMount, HostPath: "/home/u/p", ContainerPath: "/workspace/p", Owner: &HostOwner{UID: 1000, GID: 1000}},
			wantDir: "/workspace/p", wantCwd: "/workspace/p",
			wantMount: []Mount{{Source: "/home/u/p", Target: "/workspace/p", Origin: "workspace.host_path"}}},
		{name: "clone without base dir", intent: IntentInteractive, ws: Workspace{Strategy: WorkspaceGitHubClone},
			key: "workspace.base_dir", reason: errdefs.ErrMissingRequired},
		{name: "clone relative base dir", intent: IntentInteractive, ws: Workspace{Strategy: WorkspaceGitHubClone, BaseDir: "work"},
			key: "workspace.base_dir", reason: errdefs.ErrInvalidValue},
		{name: "clone with host path", intent: IntentInteractive, ws: Workspace{Strategy: WorkspaceGitHubClone, BaseDir: "/w", HostPath: "/h"},
			key: "workspace.host_path", reason: errdefs.ErrConflict},
		{name: "tools clone", intent: IntentTools, ws: Workspace{Strategy: WorkspaceGitHubClone, BaseDir: "/w"},
			key: "workspace.source", reason: errdefs.ErrConflict},
		{name: "none with host path", intent: IntentInteractive, ws: Workspace{HostPath: "/h"},
			key: "workspace.host_path", reason: errdefs.ErrConflict},
		{name: "host mount relative", intent: IntentInteractive, ws: Workspace{Strategy: WorkspaceHostMount, HostPath: "p", Owner: &HostOwner{UID: 1000, GID: 1000}},
			key: "workspace.host_path", reason: errdefs.ErrInvalidValue},
		{name: "host mount target /", intent: IntentInteractive, ws: Workspace{Strategy: WorkspaceHostMount, HostPath: "/p", ContainerPath: "/", Owner: &HostOwner{UID: 1000, GID: 1000}},
			key: "workspace.container_path", reason: errdefs.ErrRefused},
		{name: "host mount exposing socket", intent: IntentInteractive, ws: Workspace{Strategy: WorkspaceHostMount, HostPath: "/run/user/1000", Owner: &HostOwner{UID: 1000, GID: 1000}},
			sockets: []string{"/run/user/1000/podman/podman.sock"}, key: "workspace.host_path", reason: errdefs.ErrRefused},
		{name: "token dir exposing socket", intent: IntentInteractive, token: "/run/podman/ghapp_token",
			sockets: []string{"/run/podman/podman.sock"}, key: "token_file", reason: errdefs.ErrRefused},
		{name: "unknown source", intent: IntentInteractive, ws: Workspace{Strategy: "nfs"},
			key: "workspace.source", reason: errdefs.ErrInvalidValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := baseRequest(tt.intent, KindCodex, "")
			if tt.intent == IntentTools {
				req.Agent.Kind = KindNone
			}
			if tt.intent == IntentHosting {
				req.Agent.Mode = ModeCodexAppServer
			}
			req.Workspace, req.TokenFile, req.EngineSocketPaths = tt.ws, tt.token, tt.sockets
			p, err := Normalize(req)
			if tt.key != "" {
				wantConfigError(t, err, tt.key, tt.reason)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.WorkingDir != tt.wantDir {
				t.Errorf("WorkingDir = %q, want %q", p.WorkingDir, tt.wantDir)
			}
			if cfg, _, _ := p.Render(); cfg.WorkingDir != tt.wantCwd {
				t.Errorf("container WorkingDir = %q, want %q", cfg.WorkingDir, tt.wantCwd)
			}
			if !slices.Equal(p.Mounts, tt.wantMount) {
				t.Errorf("Mounts = %+v, want %+v", p.Mounts, tt.wantMount)
			}
			if exec, ok := p.AgentExec(); ok && exec.WorkingDir != tt.wantDir {
				t.Errorf("exec WorkingDir = %q", exec.WorkingDir)
			}
		})
	}
}

func TestNormalizeErrorsNameTheFix(t *testing.T) {
	req := baseRequest(IntentHosting, KindCodex, ModePodbot)
	_, err := Normalize(req)
	if err == nil || !strings.Contains(err.Error(), "agent.mode") || !strings.Contains(err.Error(), "podbot run") {
		t.Errorf("error %v should name agent.mode and podbot run", err)
	}
}
