package podbot

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/errdefs"
)

// TestKindLaunch: an ACP kind's key variables join the allowlist, its
// endpoint becomes environment and one exact egress rule, and the
// operator's own variables win over the kind's.
func TestKindLaunch(t *testing.T) {
	s, err := kindLaunch(config.Agent{Kind: "gemini", Mode: "acp", ModelEndpoint: "http://10.88.0.1:4010/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.keyEnv, "GEMINI_API_KEY") || !slices.Equal(s.allowHosts, []string{"10.88.0.1:4010"}) {
		t.Errorf("settings %+v", s)
	}
	if !slices.Contains(s.env, "GOOGLE_GEMINI_BASE_URL=http://10.88.0.1:4010/v1") {
		t.Errorf("env %v", s.env)
	}
	for _, kv := range s.env {
		if strings.Contains(kv, "API_KEY=") {
			t.Errorf("a key variable in the fixed environment: %q", kv)
		}
	}
	// Keys come through the allowlist path, so they are secrets to redact.
	env, secrets, err := creds.Passthrough(s.keyEnv, nil, []string{"GEMINI_API_KEY=k-123", "UNRELATED=x"})
	if err != nil || !slices.Equal(env, []string{"GEMINI_API_KEY=k-123"}) || !slices.Contains(secrets, "k-123") {
		t.Errorf("passthrough %v %v %v", env, secrets, err)
	}
	if s, err := kindLaunch(config.Agent{Kind: "opencode", ModelEndpoint: "https://models.example/v1"}); err != nil || s.allowHosts[0] != "models.example:443" {
		t.Errorf("https default port: %+v %v", s, err)
	}
	if s, err := kindLaunch(config.Agent{Kind: "claude"}); err != nil || len(s.keyEnv)+len(s.env)+len(s.allowHosts) != 0 {
		t.Errorf("claude gets nothing extra: %+v %v", s, err)
	}
	var ce *errdefs.ConfigError
	if _, err := kindLaunch(config.Agent{Kind: "droid", ModelEndpoint: "http://h/v1"}); !errors.As(err, &ce) || ce.Key != "agent.model_endpoint" {
		t.Errorf("droid endpoint: %v", err)
	}
	got := mergeEnv([]string{"A=kind", "B=kind"}, []string{"B=operator", "C=operator"})
	if !slices.Equal(got, []string{"A=kind", "B=operator", "C=operator"}) {
		t.Errorf("mergeEnv = %v", got)
	}
}

// TestAgentPresetsNewKinds: the agent egress preset covers each ACP kind.
func TestAgentPresetsNewKinds(t *testing.T) {
	for kind, host := range map[string]string{"opencode": "models.dev", "droid": "*.factory.ai", "gemini": "generativelanguage.googleapis.com",
		"claude-acp": "api.anthropic.com", "codex-acp": "api.openai.com", "goose": "api.openai.com"} {
		rules, ok := egress.PresetRules(egress.PresetAgent, egress.PresetOptions{AgentKind: kind})
		found := false
		for _, r := range rules {
			found = found || r.String() == host
		}
		if !ok || !found {
			t.Errorf("%s preset lacks %s: %v", kind, host, rules)
		}
	}
}
