package podbot

import (
	"strings"
	"testing"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
)

func isolationChecks(info *engine.EngineInfo, cfg config.Config) map[string]Check {
	out := map[string]Check{}
	doctorIsolation(info, &config.Loaded{Config: cfg}, func(name string, st CheckStatus, detail, fix string) {
		out[name] = Check{Name: name, Status: st, Detail: detail, Fix: fix}
	})
	return out
}

func TestDoctorIsolation(t *testing.T) {
	cfg := config.Default()
	rootful := &engine.EngineInfo{SecurityOptions: []string{"name=seccomp,profile=default", "name=selinux"}}
	c := isolationChecks(rootful, cfg)
	if d := c["user namespace"].Detail; !strings.Contains(d, "host's root") || !strings.Contains(d, "owner") {
		t.Errorf("rootful user namespace: %q", d)
	}
	if c["seccomp"].Status != CheckOK || c["selinux"].Status != CheckWarn {
		t.Errorf("seccomp %v, selinux %v", c["seccomp"], c["selinux"])
	}
	if g := c["isolation gaps"]; g.Status != CheckWarn || strings.Contains(g.Detail, "privileged") {
		t.Errorf("gaps without privileged: %+v", g)
	}

	rootless := &engine.EngineInfo{Rootless: true}
	cfg.Sandbox.Privileged = true
	cfg.Sandbox.SELinuxLabelMode = config.SELinuxKeepDefault
	c = isolationChecks(rootless, cfg)
	if !strings.Contains(c["user namespace"].Detail, "rootless") || c["seccomp"].Status != CheckWarn {
		t.Errorf("rootless: %+v", c)
	}
	if !strings.Contains(c["isolation gaps"].Detail, "sandbox.privileged") {
		t.Errorf("privileged not named as a gap: %q", c["isolation gaps"].Detail)
	}
	remap := &engine.EngineInfo{SecurityOptions: []string{"name=userns"}}
	if d := isolationChecks(remap, config.Default())["user namespace"].Detail; !strings.Contains(d, "userns-remap") {
		t.Errorf("userns-remap: %q", d)
	}
}
