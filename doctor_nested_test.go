package podbot

import (
	"strings"
	"testing"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
)

func TestNestedVerdict(t *testing.T) {
	tests := []struct {
		name           string
		facts          NestedFacts
		priv, min      bool
		needs          string
		detailContains string
	}{
		{"podman rootful", NestedFacts{EngineKind: engine.KindPodman, UserNamespaces: true}, true, true,
			`sandbox.user = "agent"`, "privileged profile: works"},
		{"dockerd without CAP_SYS_RESOURCE", NestedFacts{EngineKind: engine.KindDocker, UserNamespaces: true, PrivilegedBlocked: true}, false, false,
			"", "CAP_SYS_CHROOT"},
		{"no user namespaces", NestedFacts{EngineKind: engine.KindPodman}, true, false, "", "user namespaces are disabled"},
		{"rootless engine", NestedFacts{EngineKind: engine.KindPodman, EngineRootless: true, UserNamespaces: true}, true, true,
			`sandbox.user = "agent"`, "rootless engine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Nested(tt.facts)
			if v.Privileged != tt.priv || v.Minimal != tt.min {
				t.Errorf("verdict %+v, want privileged %v minimal %v", v, tt.priv, tt.min)
			}
			if got := strings.Join(v.MinimalNeeds, " "); got != tt.needs {
				t.Errorf("needs %q, want %q", got, tt.needs)
			}
			if !strings.Contains(v.Detail(), tt.detailContains) {
				t.Errorf("detail %q lacks %q", v.Detail(), tt.detailContains)
			}
		})
	}
}

func TestNestedMinimalReady(t *testing.T) {
	// A verdict that also asks for SYS_ADMIN, as a host could.
	needsFuse := NestedVerdict{Minimal: true, MinimalNeeds: []string{needAgentUser, needSysAdmin}}
	podman := Nested(NestedFacts{EngineKind: engine.KindPodman, UserNamespaces: true})
	tests := []struct {
		name    string
		v       NestedVerdict
		sb      config.Sandbox
		ready   bool
		missing string
	}{
		{"podman as root", podman, config.Sandbox{}, false, `sandbox.user = "agent"`},
		{"podman as agent", podman, config.Sandbox{User: "agent"}, true, ""},
		{"podman as 1000:1000", podman, config.Sandbox{User: "1000:1000"}, true, ""},
		{"agent without SYS_ADMIN", needsFuse, config.Sandbox{User: "agent"}, false, "sandbox.mount_dev_fuse = true"},
		{"agent with SYS_ADMIN", needsFuse, config.Sandbox{User: "agent", MountDevFuse: true}, true, ""},
		{"dockerd", Nested(NestedFacts{EngineKind: engine.KindDocker, UserNamespaces: true}), config.Sandbox{User: "agent", MountDevFuse: true}, false, ""},
		{"no user namespaces", Nested(NestedFacts{}), config.Sandbox{User: "agent"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ready, missing := tt.v.MinimalReady(tt.sb)
			if ready != tt.ready || strings.Join(missing, " ") != tt.missing {
				t.Errorf("MinimalReady = %v %q, want %v %q", ready, missing, tt.ready, tt.missing)
			}
		})
	}
}

func TestDoctorNestedCheck(t *testing.T) {
	host := HostProbe{ReadFile: func(p string) ([]byte, error) {
		if strings.HasSuffix(p, "max_user_namespaces") {
			return []byte("15000\n"), nil
		}
		// CapBnd without CAP_SYS_RESOURCE (bit 24).
		return []byte("CapBnd:\t000001fffeffffff\n"), nil
	}}
	tests := []struct {
		name   string
		kind   string
		sb     config.Sandbox
		status CheckStatus
		fix    string
	}{
		{"podman privileged", engine.KindPodman, config.Sandbox{Privileged: true}, CheckOK, ""},
		{"podman minimal as root", engine.KindPodman, config.Sandbox{}, CheckWarn, `sandbox.user = "agent"`},
		{"podman minimal as agent", engine.KindPodman, config.Sandbox{User: "agent"}, CheckOK, ""},
		{"docker privileged blocked", engine.KindDocker, config.Sandbox{Privileged: true}, CheckWarn, "not available on this host"},
		{"docker minimal", engine.KindDocker, config.Sandbox{User: "agent", MountDevFuse: true}, CheckWarn, "not available on this host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Check
			add := func(name string, st CheckStatus, detail, fix string) {
				got = append(got, Check{Name: name, Status: st, Detail: detail, Fix: fix})
			}
			doctorNested(host, &engine.EngineInfo{Kind: tt.kind}, &config.Loaded{Config: config.Config{Sandbox: tt.sb}}, add)
			if len(got) != 1 || got[0].Name != NestedCheckName {
				t.Fatalf("checks = %+v", got)
			}
			if got[0].Status != tt.status || !strings.Contains(got[0].Fix, tt.fix) {
				t.Errorf("check = %+v, want status %s fix containing %q", got[0], tt.status, tt.fix)
			}
		})
	}
}
