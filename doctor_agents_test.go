package podbot

import (
	"strings"
	"testing"

	sandboximage "github.com/podbot/podbot/images/sandbox"
)

// TestDoctorAgents reads the image's agent-versions label and warns when
// the configured kind's agent is missing.
func TestDoctorAgents(t *testing.T) {
	labels := map[string]string{sandboximage.AgentVersionsLabel: "opencode=1.18.33,goose=1.9.0,gemini=0.61.0\x1b[2J"}
	for _, tt := range []struct {
		kind   string
		status CheckStatus
		detail string
	}{
		{"opencode", CheckOK, "goose 1.9.0, opencode 1.18.33"},
		{"goose", CheckOK, "goose 1.9.0"},
		{"custom", CheckOK, "opencode 1.18.33"},
		{"claude-acp", CheckWarn, "needs claude-acp"},
		{"codex", CheckWarn, "needs codex"},
	} {
		var got []Check
		add := func(name string, st CheckStatus, detail, fix string) {
			got = append(got, Check{Name: name, Status: st, Detail: detail, Fix: fix})
		}
		agents := doctorAgents("img:1", labels, tt.kind, add)
		if len(got) != 1 || got[0].Name != "agents" || got[0].Status != tt.status || !strings.Contains(got[0].Detail, tt.detail) {
			t.Errorf("%s: %+v", tt.kind, got)
		}
		if strings.Contains(got[0].Detail, "gemini") || strings.Contains(got[0].Detail, "\x1b") {
			t.Errorf("a malformed label entry was shown: %q", got[0].Detail)
		}
		if tt.status == CheckWarn && !strings.Contains(got[0].Fix, "--agents") {
			t.Errorf("fix %q", got[0].Fix)
		}
		if len(agents) != 2 {
			t.Errorf("agents %v", agents)
		}
	}
	var got []Check
	doctorAgents("img:1", nil, "", func(name string, st CheckStatus, detail, fix string) {
		got = append(got, Check{Name: name, Status: st, Detail: detail})
	})
	if got[0].Status != CheckOK || !strings.Contains(got[0].Detail, "none listed") {
		t.Errorf("no label: %+v", got)
	}
}
