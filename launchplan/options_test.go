package launchplan

import (
	"errors"
	"slices"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

// applyOne applies a single option to a fresh plan.
func applyOne(t *testing.T, opt Option) (Plan, error) {
	t.Helper()
	var p Plan
	err := p.Apply(opt)
	return p, err
}

// wantConfigError checks err is a ConfigError for key with reason.
func wantConfigError(t *testing.T, err error, key string, reason error) {
	t.Helper()
	var ce *errdefs.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("error = %v, want *errdefs.ConfigError", err)
	}
	if ce.Key != key {
		t.Errorf("ConfigError.Key = %q, want %q (error: %v)", ce.Key, key, err)
	}
	if reason != nil && !errors.Is(err, reason) {
		t.Errorf("error %v does not match reason %v", err, reason)
	}
}

func TestWithNoNewPrivileges(t *testing.T) {
	p, err := applyOne(t, WithNoNewPrivileges())
	if err != nil || !p.Security.NoNewPrivileges {
		t.Fatalf("NoNewPrivileges = %v, err = %v", p.Security.NoNewPrivileges, err)
	}
	_, hc, _ := p.Render()
	if !slices.Contains(hc.SecurityOpt, "no-new-privileges") {
		t.Errorf("SecurityOpt = %v, want no-new-privileges", hc.SecurityOpt)
	}
	for _, o := range hc.SecurityOpt {
		if o == "seccomp=unconfined" || o == "seccomp:unconfined" {
			t.Errorf("SecurityOpt disables seccomp: %v", hc.SecurityOpt)
		}
	}
}

func TestWithCapDropAll(t *testing.T) {
	tests := []struct {
		name    string
		prior   []string
		keep    []string
		want    []string
		wantErr error
	}{
		{name: "drop everything", want: nil},
		{name: "keep normalizes prefix and case", keep: []string{"cap_chown", "KILL"}, want: []string{"CHOWN", "KILL"}},
		{name: "merge without duplicates", prior: []string{"SYS_ADMIN"}, keep: []string{"SYS_ADMIN", "CAP_KILL"}, want: []string{"SYS_ADMIN", "KILL"}},
		{name: "unknown capability", keep: []string{"SYS_EVERYTHING"}, wantErr: errdefs.ErrInvalidValue},
		{name: "ALL refused", keep: []string{"all"}, wantErr: errdefs.ErrRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Plan{Security: Security{CapAdd: tt.prior}}
			err := p.Apply(WithCapDropAll(tt.keep...))
			if tt.wantErr != nil {
				wantConfigError(t, err, "sandbox.cap_add", tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !p.Security.CapDropAll || !slices.Equal(p.Security.CapAdd, tt.want) {
				t.Errorf("CapDropAll=%v CapAdd=%v, want true %v", p.Security.CapDropAll, p.Security.CapAdd, tt.want)
			}
			_, hc, _ := p.Render()
			if !slices.Equal(hc.CapDrop, []string{"ALL"}) {
				t.Errorf("rendered CapDrop = %v", hc.CapDrop)
			}
		})
	}
}

func TestDefaultKeptCapabilitiesAreKnown(t *testing.T) {
	for _, c := range DefaultKeptCapabilities() {
		if !knownCapability(c) {
			t.Errorf("default capability %q is not a known capability", c)
		}
	}
	for _, dropped := range []string{"MKNOD", "NET_RAW", "SETFCAP", "SETPCAP", "SYS_CHROOT", "AUDIT_WRITE", "SYS_ADMIN"} {
		if slices.Contains(DefaultKeptCapabilities(), dropped) {
			t.Errorf("default list keeps %s", dropped)
		}
	}
}

func TestWithPidsLimit(t *testing.T) {
	p, err := applyOne(t, WithPidsLimit(100))
	if err != nil || p.Resources.PidsLimit != 100 {
		t.Fatalf("PidsLimit = %d, err = %v", p.Resources.PidsLimit, err)
	}
	_, hc, _ := p.Render()
	if hc.PidsLimit == nil || *hc.PidsLimit != 100 {
		t.Errorf("rendered PidsLimit = %v", hc.PidsLimit)
	}
	p, _ = applyOne(t, WithPidsLimit(0))
	if _, hc, _ := p.Render(); hc.PidsLimit != nil {
		t.Errorf("0 must render no limit, got %d", *hc.PidsLimit)
	}
	_, err = applyOne(t, WithPidsLimit(-5))
	wantConfigError(t, err, "sandbox.pids_limit", errdefs.ErrInvalidValue)
}

func TestWithMemory(t *testing.T) {
	tests := []struct {
		in      int64
		wantErr bool
	}{{0, false}, {MinMemoryBytes, false}, {1 << 30, false}, {1024, true}, {-1, true}}
	for _, tt := range tests {
		p, err := applyOne(t, WithMemory(tt.in))
		if tt.wantErr {
			wantConfigError(t, err, "sandbox.memory", errdefs.ErrInvalidValue)
			continue
		}
		if err != nil {
			t.Fatalf("WithMemory(%d): %v", tt.in, err)
		}
		if _, hc, _ := p.Render(); hc.Memory != tt.in {
			t.Errorf("WithMemory(%d) rendered %d", tt.in, hc.Memory)
		}
	}
}

func TestWithCPUs(t *testing.T) {
	tests := []struct {
		in      int64
		wantErr bool
	}{{0, false}, {MinNanoCPUs, false}, {1_500_000_000, false}, {1000, true}, {-1, true}}
	for _, tt := range tests {
		p, err := applyOne(t, WithCPUs(tt.in))
		if tt.wantErr {
			wantConfigError(t, err, "sandbox.cpus", errdefs.ErrInvalidValue)
			continue
		}
		if err != nil {
			t.Fatalf("WithCPUs(%d): %v", tt.in, err)
		}
		if _, hc, _ := p.Render(); hc.NanoCPUs != tt.in {
			t.Errorf("WithCPUs(%d) rendered %d", tt.in, hc.NanoCPUs)
		}
	}
}

func TestWithNetwork(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  error
	}{
		{in: "", want: ""},
		{in: "default", want: ""},
		{in: "none", want: "none"},
		{in: "bridge", want: "bridge"},
		{in: "podbot_net-1", want: "podbot_net-1"},
		{in: "host", wantErr: errdefs.ErrRefused},
		{in: "container:abc", wantErr: errdefs.ErrRefused},
		{in: "ns:/proc/1/ns/net", wantErr: errdefs.ErrRefused},
		{in: "bad name", wantErr: errdefs.ErrInvalidValue},
		{in: "-x", wantErr: errdefs.ErrInvalidValue},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := applyOne(t, WithNetwork(tt.in))
			if tt.wantErr != nil {
				wantConfigError(t, err, "sandbox.network", tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, hc, _ := p.Render(); string(hc.NetworkMode) != tt.want {
				t.Errorf("NetworkMode = %q, want %q", hc.NetworkMode, tt.want)
			}
		})
	}
}

func TestWithReadOnlyRootfs(t *testing.T) {
	p, err := applyOne(t, WithReadOnlyRootfs())
	if err != nil {
		t.Fatal(err)
	}
	_, hc, _ := p.Render()
	if !hc.ReadonlyRootfs {
		t.Error("ReadonlyRootfs not set")
	}
	if hc.Tmpfs["/tmp"] != TmpfsTmpOptions {
		t.Errorf("Tmpfs = %v, want /tmp %q", hc.Tmpfs, TmpfsTmpOptions)
	}
}

func TestWithPrivileged(t *testing.T) {
	var p Plan
	err := p.Apply(WithCapDropAll("CHOWN"), WithMinimalProfile(true, SELinuxDisableForContainer), WithNoNewPrivileges(), WithPrivileged())
	if err != nil {
		t.Fatal(err)
	}
	_, hc, _ := p.Render()
	if !hc.Privileged {
		t.Error("Privileged not set")
	}
	if len(hc.CapAdd) != 0 || len(hc.CapDrop) != 0 || len(hc.Devices) != 0 || slices.Contains(hc.SecurityOpt, "label=disable") {
		t.Errorf("privileged profile kept minimal settings: CapAdd=%v CapDrop=%v Devices=%v SecurityOpt=%v",
			hc.CapAdd, hc.CapDrop, hc.Devices, hc.SecurityOpt)
	}
	wantConfigError(t, p.Apply(WithMinimalProfile(false, "")), "sandbox.privileged", errdefs.ErrConflict)
}

func TestWithMinimalProfile(t *testing.T) {
	tests := []struct {
		name      string
		fuse      bool
		mode      SELinuxLabelMode
		wantLabel bool
		wantFuse  bool
		wantErr   bool
	}{
		{name: "defaults disable label", mode: "", wantLabel: true},
		{name: "disable_for_container", mode: SELinuxDisableForContainer, wantLabel: true},
		{name: "keep_default", mode: SELinuxKeepDefault},
		{name: "fuse", fuse: true, mode: SELinuxKeepDefault, wantFuse: true},
		{name: "bad mode", mode: "enforce", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := applyOne(t, WithMinimalProfile(tt.fuse, tt.mode))
			if tt.wantErr {
				wantConfigError(t, err, "sandbox.selinux_label_mode", errdefs.ErrInvalidValue)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, hc, _ := p.Render()
			if got := slices.Contains(hc.SecurityOpt, "label=disable"); got != tt.wantLabel {
				t.Errorf("label=disable present = %v, want %v (%v)", got, tt.wantLabel, hc.SecurityOpt)
			}
			hasFuse := len(hc.Devices) == 1 && hc.Devices[0].PathOnHost == "/dev/fuse" &&
				hc.Devices[0].PathInContainer == "/dev/fuse" && hc.Devices[0].CgroupPermissions == "rwm"
			if hasFuse != tt.wantFuse || slices.Contains(hc.CapAdd, "SYS_ADMIN") != tt.wantFuse {
				t.Errorf("fuse: Devices=%v CapAdd=%v, want fuse=%v", hc.Devices, hc.CapAdd, tt.wantFuse)
			}
			if hc.Privileged {
				t.Error("minimal profile rendered privileged")
			}
		})
	}
	// Applying twice does not duplicate the device.
	var p Plan
	if err := p.Apply(WithMinimalProfile(true, ""), WithMinimalProfile(true, "")); err != nil {
		t.Fatal(err)
	}
	if len(p.Security.Devices) != 1 || len(p.Security.CapAdd) != 1 {
		t.Errorf("duplicate fuse settings: %v %v", p.Security.Devices, p.Security.CapAdd)
	}
}

func TestWithGPUs(t *testing.T) {
	p, err := applyOne(t, WithGPUs("nvidia.com/gpu=all", "nvidia.com/gpu=0"))
	if err != nil {
		t.Fatal(err)
	}
	_, hc, _ := p.Render()
	if len(hc.DeviceRequests) != 1 || hc.DeviceRequests[0].Driver != "cdi" ||
		!slices.Equal(hc.DeviceRequests[0].DeviceIDs, []string{"nvidia.com/gpu=all", "nvidia.com/gpu=0"}) {
		t.Errorf("DeviceRequests = %+v", hc.DeviceRequests)
	}
	for _, bad := range []string{"all", "nvidia.com/gpu", "gpu=0", "nvidia.com/gpu=", "nvidia.com/gpu=a b", "/x=y"} {
		_, err := applyOne(t, WithGPUs(bad))
		wantConfigError(t, err, "sandbox.gpus", errdefs.ErrInvalidValue)
	}
}

func TestWithLabels(t *testing.T) {
	p, err := applyOne(t, WithLabels(map[string]string{"team": "infra", "com.example/x": ""}))
	if err != nil {
		t.Fatal(err)
	}
	if _, hc, _ := p.Render(); hc == nil {
		t.Fatal("nil host config")
	}
	cfg, _, _ := p.Render()
	if cfg.Labels["team"] != "infra" {
		t.Errorf("labels = %v", cfg.Labels)
	}
	wantConfigError(t, func() error {
		_, err := applyOne(t, WithLabels(map[string]string{"podbot.managed": "false"}))
		return err
	}(),
		"labels", errdefs.ErrRefused)
	for _, bad := range []string{"", "a=b", "a\nb"} {
		_, err := applyOne(t, WithLabels(map[string]string{bad: "v"}))
		wantConfigError(t, err, "labels", errdefs.ErrInvalidValue)
	}
}

func TestWithTokenMount(t *testing.T) {
	p, err := applyOne(t, WithTokenMount("/run/user/1000/podbot/c1/ghapp_token"))
	if err != nil {
		t.Fatal(err)
	}
	_, hc, _ := p.Render()
	if len(hc.Mounts) != 1 {
		t.Fatalf("mounts = %+v", hc.Mounts)
	}
	m := hc.Mounts[0]
	if m.Source != "/run/user/1000/podbot/c1" || m.Target != "/run/secrets" || !m.ReadOnly || m.Type != "bind" {
		t.Errorf("token mount = %+v", m)
	}
	if p.Labels[LabelGitHubToken] != "true" {
		t.Errorf("labels = %v, want %s=true", p.Labels, LabelGitHubToken)
	}
	for _, bad := range []string{"relative/ghapp_token", "/run/x/../y/ghapp_token", "/run/x/token"} {
		_, err := applyOne(t, WithTokenMount(bad))
		wantConfigError(t, err, "token_file", errdefs.ErrInvalidValue)
	}
}

func TestWithTrustMount(t *testing.T) {
	p, err := applyOne(t, WithTrustMount("/run/user/1000/podbot/egress/c1/trust", "/etc/podbot"))
	if err != nil {
		t.Fatal(err)
	}
	_, hc, _ := p.Render()
	if len(hc.Mounts) != 1 {
		t.Fatalf("mounts = %+v", hc.Mounts)
	}
	m := hc.Mounts[0]
	if m.Source != "/run/user/1000/podbot/egress/c1/trust" || m.Target != "/etc/podbot" || !m.ReadOnly || m.Type != "bind" {
		t.Errorf("trust mount = %+v", m)
	}
	for _, bad := range [][2]string{{"relative/trust", "/etc/podbot"}, {"/run/x/../trust", "/etc/podbot"}, {"/run/trust", "etc/podbot"}, {"/", "/etc/podbot"}} {
		_, err := applyOne(t, WithTrustMount(bad[0], bad[1]))
		var ce *errdefs.ConfigError
		if !errors.As(err, &ce) || ce.Key != "secrets" {
			t.Errorf("WithTrustMount(%q, %q) = %v", bad[0], bad[1], err)
		}
	}
	// The socket guard still runs over it.
	var g Plan
	err = g.Apply(WithSocketGuard("/run/user/1000/podman/podman.sock"), WithTrustMount("/run/user/1000", "/etc/podbot"))
	wantConfigError(t, err, "secrets", errdefs.ErrRefused)
	// It cannot overlap another mount.
	var o Plan
	err = o.Apply(WithWorkspaceMount("/home/u/src", "/etc"), WithTrustMount("/run/t", "/etc/podbot"))
	wantConfigError(t, err, "secrets", errdefs.ErrConflict)
}

func TestWithWorkspaceMount(t *testing.T) {
	p, err := applyOne(t, WithWorkspaceMount("/home/u/src/proj", "/workspace/proj"))
	if err != nil {
		t.Fatal(err)
	}
	if p.WorkingDir != "/workspace/proj" {
		t.Errorf("WorkingDir = %q", p.WorkingDir)
	}
	if len(p.Mounts) != 1 || p.Mounts[0].ReadOnly || p.Mounts[0].Source != "/home/u/src/proj" {
		t.Errorf("mounts = %+v", p.Mounts)
	}
	tests := []struct {
		src, dst, key string
		reason        error
	}{
		{"relative", "/workspace", "workspace.host_path", errdefs.ErrInvalidValue},
		{"/a/../b", "/workspace", "workspace.host_path", errdefs.ErrInvalidValue},
		{"/", "/workspace", "workspace.host_path", errdefs.ErrRefused},
		{"", "/workspace", "workspace.host_path", errdefs.ErrMissingRequired},
		{"/src", "workspace", "workspace.container_path", errdefs.ErrInvalidValue},
		{"/src", "/", "workspace.container_path", errdefs.ErrRefused},
		{"/src", "/w/../etc", "workspace.container_path", errdefs.ErrInvalidValue},
	}
	for _, tt := range tests {
		_, err := applyOne(t, WithWorkspaceMount(tt.src, tt.dst))
		wantConfigError(t, err, tt.key, tt.reason)
	}
	// Overlapping targets are refused.
	var q Plan
	err = q.Apply(WithReadOnlyRootfs(), WithWorkspaceMount("/src", "/tmp/w"))
	wantConfigError(t, err, "workspace.host_path", errdefs.ErrConflict)
	q = Plan{}
	err = q.Apply(WithTokenMount("/t/ghapp_token"), WithWorkspaceMount("/src", "/run"))
	wantConfigError(t, err, "workspace.host_path", errdefs.ErrConflict)
}

func TestWithUser(t *testing.T) {
	for _, ok := range []string{"root", "1000", "65534:65534", "agent:staff"} {
		if p, err := applyOne(t, WithUser(ok)); err != nil || p.User != ok {
			t.Errorf("WithUser(%q) = %q, %v", ok, p.User, err)
		}
	}
	for _, bad := range []string{"a b", "1:2:3", ":1", "1:", "x\x00"} {
		_, err := applyOne(t, WithUser(bad))
		wantConfigError(t, err, "sandbox.user", errdefs.ErrInvalidValue)
	}
}

func TestWithEnv(t *testing.T) {
	p, err := applyOne(t, WithEnv("A=1", "EMPTY=", "B=x=y"))
	if err != nil || !slices.Equal(p.Env, []string{"A=1", "EMPTY=", "B=x=y"}) {
		t.Fatalf("Env = %v, err = %v", p.Env, err)
	}
	for _, bad := range []string{"NOEQUALS", "=v", "A B=1", "A=\x00"} {
		_, err := applyOne(t, WithEnv(bad))
		wantConfigError(t, err, "agent.env_allowlist", errdefs.ErrInvalidValue)
	}
	for _, k := range []string{"DOCKER_HOST", "CONTAINER_HOST", "PODMAN_HOST"} {
		_, err := applyOne(t, WithEnv(k+"=unix:///run/podman/podman.sock"))
		wantConfigError(t, err, "agent.env_allowlist", errdefs.ErrRefused)
	}
}

func TestDefaultCapsForNonRootUser(t *testing.T) {
	keep := []string{"CHOWN", "KILL"}
	for user, want := range map[string]int{"": 2, "root": 2, "0": 2, "0:0": 2, "root:wheel": 2,
		"1000": 0, "1000:1000": 0, "node": 0, "65534:65534": 0} {
		if got := len(defaultCapsFor(user, keep)); got != want {
			t.Errorf("user %q keeps %d capabilities, want %d", user, got, want)
		}
	}
}

func TestNonRootAgentKeepsNoDefaultCaps(t *testing.T) {
	p, err := Normalize(Request{Intent: IntentInteractive, Agent: Agent{Kind: KindClaude, Mode: ModePodbot},
		Image: "img", SessionID: "s1", Sandbox: Sandbox{User: "1000:1000", CapAdd: []string{"NET_RAW"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Security.CapAdd) != 1 || p.Security.CapAdd[0] != "NET_RAW" || !p.Security.CapDropAll {
		t.Errorf("non-root plan adds %v (drop all %v), want only the explicit NET_RAW", p.Security.CapAdd, p.Security.CapDropAll)
	}
}
