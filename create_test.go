package podbot

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/sandbox"
)

func TestCreateRequestPlans(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "run", "engine.sock")
	link := filepath.Join(dir, "link.sock")
	if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sock, link); err != nil {
		t.Fatal(err)
	}
	ep := engine.Endpoint{Scheme: engine.SchemeUnix, Address: link}
	base := config.Config{Image: "localhost/podbot-sandbox:latest", Sandbox: config.Sandbox{
		PidsLimit: 4096, Memory: 4 << 30, CPUs: 2, SELinuxLabelMode: "disable_for_container"}}
	yes, no := true, false

	cases := []struct {
		name  string
		opts  CreateOptions
		check func(t *testing.T, p launchplan.Plan)
	}{
		{name: "config defaults", opts: CreateOptions{Config: base, SessionID: "abc123"}, check: func(t *testing.T, p launchplan.Plan) {
			if p.Name != "podbot-sandbox-abc123" || p.Resources.PidsLimit != 4096 || p.Resources.MemoryBytes != 4<<30 ||
				p.Resources.NanoCPUs != 2e9 || p.Security.ReadOnlyRootfs || p.Security.Privileged {
				t.Errorf("plan %+v %+v %+v", p.Name, p.Resources, p.Security)
			}
			if !slices.Equal(p.InitCommand, launchplan.DefaultInitCommand()) {
				t.Errorf("init %v without a sidecar, want the default", p.InitCommand)
			}
			if p.Labels[launchplan.LabelIntent] != "interactive" || p.Labels[launchplan.LabelAgentKind] != "none" {
				t.Errorf("labels %v", p.Labels)
			}
		}},
		{name: "zero config limits mean unlimited", opts: CreateOptions{Config: config.Config{Image: "img"}, SessionID: "s"},
			check: func(t *testing.T, p launchplan.Plan) {
				if p.Resources != (launchplan.Resources{}) {
					t.Errorf("resources %+v, want none", p.Resources)
				}
			}},
		{name: "flags override", opts: CreateOptions{Config: base, SessionID: "s", Name: "box", Image: "other:1", Network: "none",
			ReadOnlyRootfs: &yes, MemoryBytes: 256 << 20, NanoCPUs: 5e8, PidsLimit: 100, Privileged: &no, SidecarPath: "/x/podbot-sidecar"},
			check: func(t *testing.T, p launchplan.Plan) {
				if p.Name != "box" || p.Image != "other:1" || p.Network != "none" || !p.Security.ReadOnlyRootfs ||
					p.Resources != (launchplan.Resources{PidsLimit: 100, MemoryBytes: 256 << 20, NanoCPUs: 5e8}) {
					t.Errorf("plan %+v %+v %+v", p.Name, p.Resources, p.Security)
				}
				if !slices.Equal(p.InitCommand, []string{SidecarTarget, "init"}) {
					t.Errorf("init %v, want the sidecar", p.InitCommand)
				}
			}},
		{name: "command replaces init", opts: CreateOptions{Config: base, SessionID: "s", SidecarPath: "/x", Command: []string{"sleep", "9"}},
			check: func(t *testing.T, p launchplan.Plan) {
				if !slices.Equal(p.InitCommand, []string{"sleep", "9"}) {
					t.Errorf("init %v", p.InitCommand)
				}
			}},
		{name: "socket and its target are guarded", opts: CreateOptions{Config: base, SessionID: "s"}, check: func(t *testing.T, p launchplan.Plan) {
			real, _ := filepath.EvalSymlinks(sock)
			if !slices.Contains(p.EngineSocketPaths, link) || !slices.Contains(p.EngineSocketPaths, real) {
				t.Errorf("guarded %v, want %s and %s", p.EngineSocketPaths, link, real)
			}
			err := p.Apply(sandbox.WithSidecarMount(filepath.Dir(real)))
			if !errors.Is(err, errdefs.ErrRefused) {
				t.Errorf("mounting the socket's directory as the sidecar: %v, want refused", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := CreateRequest(ep, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			p, err := launchplan.Normalize(req)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, p)
		})
	}
}

func TestCreateRequestGeneratesSession(t *testing.T) {
	a, err := CreateRequest(engine.Endpoint{}, CreateOptions{Config: config.Config{Image: "img"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := CreateRequest(engine.Endpoint{}, CreateOptions{Config: config.Config{Image: "img"}})
	if len(a.SessionID) != 16 || a.SessionID == b.SessionID || len(a.EngineSocketPaths) != 0 {
		t.Errorf("sessions %q %q, guarded %v", a.SessionID, b.SessionID, a.EngineSocketPaths)
	}
}

func TestPrivilegedHint(t *testing.T) {
	caps := &errdefs.ContainerError{Op: "start", Reason: errdefs.ErrUnsupported, Msg: "dockerd on this host cannot run privileged containers"}
	priv := launchplan.Plan{Security: launchplan.Security{Privileged: true}}
	err := privilegedHint(caps, priv)
	if !errors.Is(err, errdefs.ErrUnsupported) || !strings.Contains(err.Error(), "privileged profile") {
		t.Errorf("hinted error %v", err)
	}
	if got := privilegedHint(caps, launchplan.Plan{}); got != error(caps) {
		t.Errorf("a non-privileged plan's error was changed: %v", got)
	}
	other := &errdefs.ContainerError{Op: "start", Reason: errdefs.ErrNotFound}
	if got := privilegedHint(other, priv); got != error(other) {
		t.Errorf("an unrelated error was changed: %v", got)
	}
}
