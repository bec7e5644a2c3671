package launchplan

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestRenderDoesNotAlias(t *testing.T) {
	req := baseRequest(IntentInteractive, KindClaude, "")
	req.Env = []string{"A=1"}
	req.Sandbox.CapAdd = []string{"CHOWN"}
	req.Workspace = Workspace{Strategy: WorkspaceHostMount, HostPath: "/home/u/p", Owner: &HostOwner{UID: 1000, GID: 1000}}
	p, err := Normalize(req)
	if err != nil {
		t.Fatal(err)
	}
	cfg, hc, nc := p.Render()
	if nc == nil || hc.Mounts[0].Type != "bind" || hc.Mounts[0].BindOptions.Propagation != "rprivate" {
		t.Fatalf("render = %+v %+v", hc.Mounts, nc)
	}
	cfg.Env[0] = "A=changed"
	cfg.Labels["podbot.managed"] = "false"
	cfg.Cmd[0] = "x"
	hc.CapAdd[0] = "SYS_ADMIN"
	if p.Env[0] != "A=1" || p.Labels["podbot.managed"] != "true" || p.InitCommand[0] != "sleep" || p.Security.CapAdd[0] != "CHOWN" {
		t.Error("rendered config aliases the plan")
	}
	exec, _ := p.AgentExec()
	exec.Cmd[0] = "x"
	if p.AgentCommand[0] != "claude" {
		t.Error("exec options alias the plan")
	}
	if cfg.Tty || cfg.OpenStdin {
		t.Error("the container's init process must not get a TTY or stdin")
	}
}

// TestRenderKeepsAgentEnvOutOfTheContainer plays the attacker who reads the
// container's configuration (docker inspect, the engine's files on disk):
// no value of the agent's environment may be found anywhere in what Render
// sends to create the container, while the agent's exec carries it.
func TestRenderKeepsAgentEnvOutOfTheContainer(t *testing.T) {
	const secret = "sk-ant-secret-value-1234"
	for _, intent := range []Intent{IntentInteractive, IntentHosting} {
		mode := ModeDefault
		if intent == IntentHosting {
			mode = ModeACP
		}
		req := baseRequest(intent, KindClaude, mode)
		req.Env = []string{"TERM=xterm"}
		req.AgentEnv = []string{"ANTHROPIC_API_KEY=" + secret, "OPENAI_API_KEY=" + secret + "-2"}
		req.Workspace = Workspace{Strategy: WorkspaceHostMount, HostPath: "/home/u/p", Owner: &HostOwner{UID: 1000, GID: 1000}}
		p, err := Normalize(req)
		if err != nil {
			t.Fatal(err)
		}
		cfg, hc, nc := p.Render()
		body, err := json.Marshal([]any{cfg, hc, nc})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(body), secret) {
			t.Errorf("%s: the create request holds the secret: %s", intent, body)
		}
		if !slices.Equal(cfg.Env, []string{"TERM=xterm", "HOME=" + AgentHome}) {
			t.Errorf("%s: container env = %v, want only the non-secret TERM and HOME", intent, cfg.Env)
		}
		exec, ok := p.AgentExec()
		if !ok || !slices.Equal(exec.Env, req.AgentEnv) {
			t.Errorf("%s: agent exec env = %v, want %v", intent, exec.Env, req.AgentEnv)
		}
		exec.Env[0] = "X=changed"
		if p.AgentEnv[0] != req.AgentEnv[0] {
			t.Errorf("%s: exec options alias the plan's agent env", intent)
		}
		if got := p.AgentEnvNames(); !slices.Equal(got, []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}) {
			t.Errorf("%s: AgentEnvNames = %v", intent, got)
		}
		if shown, _ := json.Marshal(p); strings.Contains(string(shown), secret) {
			t.Errorf("%s: the plan's JSON shows the secret: %s", intent, shown)
		}
	}
}

func TestWithAgentEnvChecksLikeWithEnv(t *testing.T) {
	p, err := applyOne(t, WithAgentEnv("A=1", "EMPTY="))
	if err != nil || !slices.Equal(p.AgentEnv, []string{"A=1", "EMPTY="}) || len(p.Env) != 0 {
		t.Fatalf("AgentEnv = %v, Env = %v, err = %v", p.AgentEnv, p.Env, err)
	}
	_, err = applyOne(t, WithAgentEnv("NOEQUALS"))
	wantConfigError(t, err, "agent.env_allowlist", errdefs.ErrInvalidValue)
	_, err = applyOne(t, WithAgentEnv("DOCKER_HOST=unix:///run/docker.sock"))
	wantConfigError(t, err, "agent.env_allowlist", errdefs.ErrRefused)
	_, err = applyOne(t, WithAgentEnv("K=v\x00"))
	if err == nil || strings.Contains(err.Error(), "v\x00") {
		t.Errorf("a NUL in a value: err = %v (must refuse without quoting the value)", err)
	}
}

// TestPackageDoesNoIO keeps launchplan pure: its non-test files may not
// import packages that reach the filesystem, environment, network or clock.
func TestPackageDoesNoIO(t *testing.T) {
	forbidden := []string{"os", "os/exec", "io/fs", "io/ioutil", "syscall", "net", "net/http", "time", "github.com/podbot/podbot/config"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(fset, f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if path == bad {
					t.Errorf("%s imports %s; launchplan must stay free of I/O", f, path)
				}
			}
		}
	}
}
