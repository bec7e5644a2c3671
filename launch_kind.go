package podbot

import (
	"net"
	"strings"

	"github.com/podbot/podbot/agentkind"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
)

// kindSettings is what a built-in ACP kind adds to a launch.
type kindSettings struct {
	// keyEnv join agent.env_allowlist (credentials, passed when set).
	keyEnv []string
	// env are fixed and endpoint variables for the agent's exec.
	env []string
	// args are appended to the kind's command for the model endpoint.
	args []string
	// allowHosts are egress rules for the model endpoint.
	allowHosts []string
}

// kindLaunch resolves the built-in ACP kind's settings; other kinds add
// nothing.
func kindLaunch(a config.Agent) (kindSettings, error) {
	k, ok := agentkind.Lookup(a.Kind)
	if !ok {
		return kindSettings{}, nil
	}
	s := kindSettings{keyEnv: k.KeyEnv, env: append([]string(nil), k.Env...)}
	if a.ModelEndpoint == "" {
		return s, nil
	}
	env, args, err := k.Endpoint(a.ModelEndpoint, a.Model)
	if err != nil {
		return kindSettings{}, &errdefs.ConfigError{Key: "agent.model_endpoint", Reason: errdefs.ErrInvalidValue, Msg: err.Error()}
	}
	u, _ := agentkind.CheckEndpoint(a.ModelEndpoint)
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	s.env, s.args = append(s.env, env...), args
	s.allowHosts = []string{net.JoinHostPort(strings.Trim(u.Hostname(), "[]"), port)}
	return s, nil
}

// mergeEnv returns base with the entries of over appended; an entry of over
// replaces base's entry of the same name, so the operator's allowlisted
// variables win over a kind's defaults.
func mergeEnv(base, over []string) []string {
	if len(base) == 0 {
		return over
	}
	names := make(map[string]bool, len(over))
	for _, kv := range over {
		k, _, _ := strings.Cut(kv, "=")
		names[k] = true
	}
	out := make([]string, 0, len(base)+len(over))
	for _, kv := range base {
		if k, _, _ := strings.Cut(kv, "="); !names[k] {
			out = append(out, kv)
		}
	}
	return append(out, over...)
}
