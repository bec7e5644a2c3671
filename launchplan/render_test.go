package launchplan

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
