package agentkind

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	sandboximage "github.com/podbot/podbot/images/sandbox"
)

// TestKindsInImage keeps every kind's CLI installable by podbot image build
// --agents and its command named.
func TestKindsInImage(t *testing.T) {
	for _, k := range Kinds() {
		if len(k.Command) == 0 || len(k.Hosts) == 0 || len(k.KeyEnv) == 0 {
			t.Errorf("%s: command, hosts and key variables must be set", k.Name)
		}
		if k.EndpointAPI == "" && k.NoEndpoint == "" {
			t.Errorf("%s: neither an endpoint override nor the reason it has none", k.Name)
		}
		if k.CLI == sandboximage.GooseName {
			continue
		}
		cli, ok := sandboximage.LookupAgentCLI(k.CLI)
		if !ok {
			t.Errorf("%s: CLI %q is not in sandboximage.AgentCLIs", k.Name, k.CLI)
		} else if cli.Bin != k.Command[0] {
			t.Errorf("%s: command %q, but CLI %s installs %q", k.Name, k.Command[0], cli.Name, cli.Bin)
		}
		for _, e := range k.Env {
			if strings.Contains(strings.ToUpper(e), "KEY=") || strings.Contains(strings.ToUpper(e), "TOKEN=") {
				t.Errorf("%s: fixed variable %q looks like a secret", k.Name, e)
			}
		}
	}
	if !IsACPKind("gemini") || IsACPKind("claude") || IsACPKind("custom") {
		t.Error("IsACPKind")
	}
}

func envMap(t *testing.T, env []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("entry %q", kv)
		}
		m[k] = v
	}
	return m
}

func TestEndpointEnv(t *testing.T) {
	const ep = "http://10.88.0.1:4010/v1/"
	for _, tt := range []struct {
		kind string
		want map[string]string
	}{
		{ClaudeACP, map[string]string{"ANTHROPIC_BASE_URL": "http://10.88.0.1:4010/v1", "ANTHROPIC_MODEL": "m1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}},
		{Gemini, map[string]string{"GOOGLE_GEMINI_BASE_URL": "http://10.88.0.1:4010/v1", "GEMINI_MODEL": "m1"}},
		{Goose, map[string]string{"GOOSE_PROVIDER": "openai", "OPENAI_HOST": "http://10.88.0.1:4010", "OPENAI_BASE_PATH": "v1/chat/completions", "GOOSE_MODEL": "m1"}},
	} {
		k, _ := Lookup(tt.kind)
		env, err := k.EndpointEnv(ep, "m1")
		if err != nil {
			t.Fatalf("%s: %v", tt.kind, err)
		}
		got := envMap(t, env)
		for name, v := range tt.want {
			if got[name] != v {
				t.Errorf("%s: %s = %q, want %q (all: %v)", tt.kind, name, got[name], v, env)
			}
		}
	}
	c, _ := Lookup(CodexACP)
	env, args, err := c.Endpoint(ep, "m1")
	if err != nil || len(env) != 0 {
		t.Fatalf("codex-acp: %v %v", env, err)
	}
	joined := strings.Join(args, " ")
	for _, want := range []string{`-c model_provider="podbot"`, `-c model_providers.podbot.base_url="http://10.88.0.1:4010/v1"`,
		`-c model_providers.podbot.env_key="OPENAI_API_KEY"`, `-c model="m1"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("codex-acp args %q lack %q", joined, want)
		}
	}
	k, _ := Lookup(OpenCode)
	env, err = k.EndpointEnv(ep, "")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Model    string `json:"model"`
		Provider map[string]struct {
			NPM     string            `json:"npm"`
			Options map[string]string `json:"options"`
		} `json:"provider"`
	}
	if err := json.Unmarshal([]byte(envMap(t, env)["OPENCODE_CONFIG_CONTENT"]), &cfg); err != nil {
		t.Fatal(err)
	}
	p := cfg.Provider["podbot"]
	if cfg.Model != "podbot/default" || p.Options["baseURL"] != "http://10.88.0.1:4010/v1" || p.NPM != "@ai-sdk/openai-compatible" {
		t.Errorf("opencode config %+v", cfg)
	}
	if strings.Contains(p.Options["apiKey"], "sk-") || p.Options["apiKey"] != "{env:OPENAI_API_KEY}" {
		t.Errorf("opencode key must come from the environment, got %q", p.Options["apiKey"])
	}
	d, _ := Lookup(Droid)
	if _, err := d.EndpointEnv(ep, ""); err == nil || !strings.Contains(err.Error(), "FACTORY_API_KEY") {
		t.Errorf("droid endpoint: %v", err)
	}
}

// TestCheckEndpointRefuses: the endpoint becomes an egress rule and agent
// configuration; only a plain http(s) base URL passes, and a refusal never
// repeats credentials or a query.
func TestCheckEndpointRefuses(t *testing.T) {
	for _, raw := range []string{
		"", "models.example/v1", "ftp://models.example/v1", "file:///etc/passwd", "http://", "http://:80/",
		"https://user:s3cret@models.example/v1", "https://models.example/v1?key=s3cret", "https://models.example/v1#s3cret",
		"https://models.example/v1\n", "unix:///var/run/docker.sock",
	} {
		_, err := CheckEndpoint(raw)
		if err == nil {
			t.Errorf("CheckEndpoint(%q) accepted", raw)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("CheckEndpoint(%q) error repeats the secret: %v", raw, err)
		}
	}
	for _, ok := range []string{"http://127.0.0.1:4010/v1", "https://models.example", "http://[fd00::1]:8080/api"} {
		if _, err := CheckEndpoint(ok); err != nil {
			t.Errorf("CheckEndpoint(%q): %v", ok, err)
		}
	}
	if !slices.Contains(Names(), Goose) {
		t.Error("goose missing from Names")
	}
}

func FuzzCheckEndpoint(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:4010/v1", "https://u:p@h/", "https://h/v1?x=1", "http://[::1]:1/", "%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := CheckEndpoint(raw)
		if err != nil {
			return
		}
		if u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			t.Fatalf("accepted %q", raw)
		}
		for _, k := range Kinds() {
			if k.EndpointAPI == "" {
				continue
			}
			env, err := k.EndpointEnv(raw, "m")
			if err != nil {
				t.Fatalf("%s: %v", k.Name, err)
			}
			for _, kv := range env {
				if strings.ContainsAny(kv, "\x00\n") {
					t.Fatalf("%s: entry %q", k.Name, kv)
				}
			}
		}
	})
}

// TestKeyEnvAreCredentials: every key variable's value is redacted from
// podbot's output, so a setting (a provider or model name) must not be one.
func TestKeyEnvAreCredentials(t *testing.T) {
	for _, k := range Kinds() {
		for _, name := range k.KeyEnv {
			if !strings.HasSuffix(name, "_KEY") && !strings.HasSuffix(name, "_TOKEN") {
				t.Errorf("%s: %s does not name a credential", k.Name, name)
			}
		}
	}
}
