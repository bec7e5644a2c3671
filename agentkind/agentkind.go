// Package agentkind describes the agents podbot hosts over the Agent Client
// Protocol as built-in kinds (agent.kind): for each, the ACP server command
// the agent image runs, the agent CLI (podbot image build --agents name)
// that provides it, the host variables that carry its API keys, the hosts
// its egress preset allows, the configuration files it reads, and how a
// model endpoint override (agent.model_endpoint) is expressed to it.
//
// The package only describes; it does no I/O. Claude Code's and Codex's own
// interactive and app-server kinds (claude, codex) are handled where they
// always were; the kinds here are ACP servers only.
package agentkind

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Built-in ACP agent kinds.
const (
	OpenCode  = "opencode"
	Droid     = "droid"
	Goose     = "goose"
	ClaudeACP = "claude-acp"
	CodexACP  = "codex-acp"
	Gemini    = "gemini"
)

// Endpoint API flavours: what a model endpoint override must speak.
const (
	APIOpenAI    = "openai"    // OpenAI-compatible (chat completions or responses)
	APIAnthropic = "anthropic" // Anthropic Messages
	APIGemini    = "gemini"    // Google Gemini API
)

// Kind is one built-in ACP agent.
type Kind struct {
	// Name is the agent.kind value.
	Name string
	// Command is the ACP server's argv in the agent image.
	Command []string
	// CLI is the podbot image build --agents name that installs Command.
	CLI string
	// KeyEnv are host variables that carry the agent's credentials. They
	// join agent.env_allowlist for this kind: each one set on the host is
	// passed to the agent's exec (never to the container's configuration)
	// and redacted from podbot's output.
	KeyEnv []string
	// Env are fixed variables the agent always gets: no secrets, only
	// switches that keep it from updating or fetching at run time.
	Env []string
	// Hosts are the agent preset's egress hosts (network.presets "agent").
	Hosts []string
	// ConfigFiles are the files the agent reads its settings from, for
	// documentation.
	ConfigFiles []string
	// EndpointAPI is the API a model endpoint override must speak; empty
	// means the kind has none.
	EndpointAPI string
	// NoEndpoint says why a kind has no endpoint override.
	NoEndpoint string
	// TunnelsHTTP is true for agents whose HTTP client sends even an
	// http:// request through a proxy as a CONNECT tunnel (Node.js's
	// fetch). podbot's egress proxy admits only TLS inside a tunnel, so
	// under the allowlist their model endpoint must be https://.
	TunnelsHTTP bool
}

// nodeEnvProxy makes Node.js's own fetch (22.21 and later) honour the
// HTTP(S)_PROXY variables that lead to podbot's egress proxy; without it
// a Node.js agent's model requests try to connect directly and fail.
const nodeEnvProxy = "NODE_USE_ENV_PROXY=1"

// Kinds lists the built-in ACP kinds in the order the README shows them.
func Kinds() []Kind {
	anthropicHosts := []string{"api.anthropic.com", "statsig.anthropic.com", "console.anthropic.com", "claude.ai", "*.claude.ai"}
	openaiHosts := []string{"api.openai.com", "auth.openai.com", "chatgpt.com", "*.chatgpt.com"}
	return []Kind{
		{Name: OpenCode, Command: []string{"opencode", "acp"}, CLI: "opencode",
			KeyEnv:      []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "OPENCODE_API_KEY"},
			Env:         []string{"OPENCODE_DISABLE_AUTOUPDATE=true", "OPENCODE_DISABLE_LSP_DOWNLOAD=true", "OPENCODE_DISABLE_DEFAULT_PLUGINS=true"},
			Hosts:       []string{"opencode.ai", "*.opencode.ai", "models.dev", "api.anthropic.com", "api.openai.com", "openrouter.ai"},
			ConfigFiles: []string{"~/.config/opencode/opencode.json", "opencode.json in the workspace", "OPENCODE_CONFIG_CONTENT"},
			EndpointAPI: APIOpenAI},
		{Name: Droid, Command: []string{"droid-acp"}, CLI: "droid",
			KeyEnv:      []string{"FACTORY_API_KEY"},
			Env:         []string{nodeEnvProxy},
			Hosts:       []string{"factory.ai", "*.factory.ai"},
			ConfigFiles: []string{"~/.factory/settings.json", "~/.factory/config.json"},
			NoEndpoint:  "droid authenticates with Factory's service (FACTORY_API_KEY) before it uses any model"},
		{Name: Goose, Command: []string{"goose", "acp"}, CLI: "goose",
			KeyEnv:      []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "OPENROUTER_API_KEY"},
			Env:         []string{"GOOSE_DISABLE_KEYRING=1"},
			Hosts:       []string{"api.openai.com", "api.anthropic.com", "generativelanguage.googleapis.com", "openrouter.ai"},
			ConfigFiles: []string{"~/.config/goose/config.yaml"},
			EndpointAPI: APIOpenAI},
		{Name: ClaudeACP, Command: []string{"claude-code-acp"}, CLI: "claude-acp",
			KeyEnv:      []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"},
			Env:         []string{"DISABLE_AUTOUPDATER=1", nodeEnvProxy},
			Hosts:       anthropicHosts,
			ConfigFiles: []string{"~/.claude/settings.json", "~/.claude.json"},
			EndpointAPI: APIAnthropic, TunnelsHTTP: true},
		{Name: CodexACP, Command: []string{"codex-acp"}, CLI: "codex-acp",
			KeyEnv:      []string{"OPENAI_API_KEY", "CODEX_API_KEY"},
			Hosts:       openaiHosts,
			ConfigFiles: []string{"$CODEX_HOME/config.toml (~/.codex/config.toml)", "$CODEX_HOME/auth.json"},
			EndpointAPI: APIOpenAI},
		{Name: Gemini, Command: []string{"gemini", "--acp"}, CLI: "gemini",
			KeyEnv:      []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"},
			Env:         []string{"GEMINI_CLI_NO_RELAUNCH=true", nodeEnvProxy},
			Hosts:       []string{"generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "oauth2.googleapis.com", "accounts.google.com"},
			ConfigFiles: []string{"~/.gemini/settings.json", ".gemini/settings.json in the workspace"},
			EndpointAPI: APIGemini, TunnelsHTTP: true},
	}
}

// Lookup returns the built-in ACP kind named name.
func Lookup(name string) (Kind, bool) {
	for _, k := range Kinds() {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Names lists the kinds' names.
func Names() []string {
	var out []string
	for _, k := range Kinds() {
		out = append(out, k.Name)
	}
	return out
}

// IsACPKind reports whether name is one of the built-in ACP kinds.
func IsACPKind(name string) bool { return slices.Contains(Names(), name) }

// CheckEndpoint validates a model endpoint override: an absolute http or
// https URL with a host and no credentials, query or fragment.
func CheckEndpoint(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%q is not a URL", raw)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%q: use an http:// or https:// URL", raw)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("%q has no host", raw)
	case u.User != nil:
		return nil, fmt.Errorf("%q carries credentials; pass the key through the kind's key variable instead", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(raw, " \t\r\n"):
		return nil, fmt.Errorf("%q: give the API's base URL without a query or fragment", u.Scheme+"://"+u.Host+u.EscapedPath())
	}
	return u, nil
}

// EndpointEnv returns the variables that point the agent at a model
// endpoint (a base URL speaking k.EndpointAPI, checked by CheckEndpoint)
// and, when model is not empty, at that model. The values hold no secret:
// keys stay in KeyEnv variables.
func (k Kind) EndpointEnv(endpoint, model string) ([]string, error) {
	env, _, err := k.Endpoint(endpoint, model)
	return env, err
}

// Endpoint is EndpointEnv plus the arguments the ACP server needs for the
// endpoint (appended to Command; codex-acp takes its provider as -c
// configuration overrides).
func (k Kind) Endpoint(endpoint, model string) (env, args []string, err error) {
	if k.EndpointAPI == "" {
		return nil, nil, fmt.Errorf("agent kind %s has no model endpoint override: %s", k.Name, k.NoEndpoint)
	}
	u, err := CheckEndpoint(endpoint)
	if err != nil {
		return nil, nil, err
	}
	base := strings.TrimRight(u.String(), "/")
	switch k.Name {
	case OpenCode:
		// A provider of podbot's own over the OpenAI-compatible SDK opencode
		// bundles; the key, when set, comes from OPENAI_API_KEY.
		if model == "" {
			model = "default"
		}
		cfg := map[string]any{
			"$schema":     "https://opencode.ai/config.json",
			"model":       "podbot/" + model,
			"small_model": "podbot/" + model,
			"autoupdate":  false,
			"share":       "disabled",
			"provider": map[string]any{"podbot": map[string]any{
				"npm":     "@ai-sdk/openai-compatible",
				"name":    "podbot model endpoint",
				"options": map[string]any{"baseURL": base, "apiKey": "{env:OPENAI_API_KEY}"},
				"models":  map[string]any{model: map[string]any{"name": model}},
			}},
		}
		b, err := json.Marshal(cfg)
		if err != nil {
			return nil, nil, err
		}
		env = append(env, "OPENCODE_CONFIG_CONTENT="+string(b), "OPENCODE_DISABLE_MODELS_FETCH=true")
	case Goose:
		host := u.Scheme + "://" + u.Host
		path := strings.TrimPrefix(strings.TrimRight(u.EscapedPath(), "/")+"/chat/completions", "/")
		env = append(env, "GOOSE_PROVIDER=openai", "OPENAI_HOST="+host, "OPENAI_BASE_PATH="+path)
		if model != "" {
			env = append(env, "GOOSE_MODEL="+model)
		}
	case ClaudeACP:
		env = append(env, "ANTHROPIC_BASE_URL="+base, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
		if model != "" {
			env = append(env, "ANTHROPIC_MODEL="+model, "ANTHROPIC_SMALL_FAST_MODEL="+model)
		}
	case CodexACP:
		// A model provider of podbot's own, as configuration overrides
		// (TOML values; a JSON string is a TOML basic string), with the key
		// read from OPENAI_API_KEY.
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		set := []string{
			"model_provider=" + q("podbot"),
			"model_providers.podbot.name=" + q("podbot model endpoint"),
			"model_providers.podbot.base_url=" + q(base),
			"model_providers.podbot.wire_api=" + q("responses"),
			"model_providers.podbot.env_key=" + q("OPENAI_API_KEY"),
			"check_for_update_on_startup=false",
			"analytics.enabled=false",
		}
		if model != "" {
			set = append(set, "model="+q(model))
		}
		for _, kv := range set {
			args = append(args, "-c", kv)
		}
	case Gemini:
		env = append(env, "GOOGLE_GEMINI_BASE_URL="+base)
		if model != "" {
			env = append(env, "GEMINI_MODEL="+model)
		}
	}
	return env, args, nil
}
