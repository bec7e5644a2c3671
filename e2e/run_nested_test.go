//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot"
)

// agentImage is the agent image (make image builds it): Podman for nested
// containers and the agent CLIs.
const agentImage = "localhost/podbot-agent:latest"

// nestedAgent is run as the agent: it makes a tiny image from the
// sandbox's own dash and C library (no registry), runs it with the inner
// Podman, and reports any engine socket it can find.
const nestedAgent = `#!/bin/sh
set -e
export HOME="$(getent passwd "$(id -u)" | cut -d: -f6)"
echo "nested: user=$(id -un)"
for p in "$@"; do
	if [ -e "$p" ]; then echo "nested: engine socket visible: $p"; fi
done
for s in $(find / -xdev -type s 2>/dev/null); do
	case "$s" in *podman.sock|*docker.sock|*containerd.sock) echo "nested: engine socket visible: $s" ;; esac
done
env | grep -E '^(DOCKER_HOST|CONTAINER_HOST|PODMAN_HOST)=' && echo "nested: engine variable visible" || true
tiny=$(mktemp -d)
for f in /bin/dash $(ldd /bin/dash | grep -o '/[^ ]*'); do
	mkdir -p "$tiny$(dirname "$f")"
	cp -L "$f" "$tiny$f"
done
tar -C "$tiny" -cf "$tiny.tar" .
podman import -q "$tiny.tar" localhost/podbot-tiny:latest >/dev/null
podman run --rm localhost/podbot-tiny:latest /bin/dash -c 'echo nested-run-ok'
`

// nestedRun runs the nested agent under podbot run with the given
// [sandbox] settings and returns podbot's exit status and output.
func nestedRun(t *testing.T, ctx context.Context, e engineUnderTest, purpose, sandboxTOML string) (int, string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "nested.sh"), []byte(nestedAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	giveToAgent(t, ws)
	sock := strings.TrimPrefix(e.Endpoint, "unix://")
	name := testName(e, purpose)
	removeOnCleanup(t, e, name)
	cfg := fmt.Sprintf(`image = %q
[agent]
kind = "custom"
command = "/workspace/nested.sh"
args = [%q, "/run/podman/podman.sock", "/var/run/docker.sock", "/run/docker.sock"]
[creds]
copy_claude = false
copy_codex = false
[workspace]
allowed_roots = [%q]
[network]
# The privileged profile could undo an allowlist sandbox's network lock, so
# podbot refuses that pair; nested containers are this test's subject.
mode = "open"
[sandbox]
%s
`, agentImage, sock, root, sandboxTOML)
	env := newRunEnv(t, cfg)
	cmd := env.command(t, ctx, e, "run", "--rm", "--name", name, "--workspace", ws)
	out, err := cmd.CombinedOutput()
	return exitStatus(t, err, cmd.Args), string(out)
}

// requireAgentImage fails the test when the agent image is missing.
func requireAgentImage(t *testing.T, ctx context.Context, e engineUnderTest) {
	t.Helper()
	if _, err := e.API.ImageInspect(ctx, agentImage); err != nil {
		t.Fatalf("%s has no %s: build it with `podbot image build --bootstrap --agents claude,codex` (make image does): %v", e.Name, agentImage, err)
	}
}

// doctorNestedVerdict runs podbot doctor --json with cfg and returns the
// nested-containers check.
func doctorNestedVerdict(t *testing.T, ctx context.Context, e engineUnderTest, cfg string) podbot.Check {
	t.Helper()
	cmd := podbotCmd(t, ctx, e, cfg, "doctor", "--json")
	out, _ := cmd.Output() // a failed check elsewhere exits non-zero; the report is still printed
	var r podbot.DoctorReport
	decodeJSON(t, string(out), &r)
	for _, c := range r.Checks {
		if c.Name == podbot.NestedCheckName {
			return c
		}
	}
	t.Fatalf("doctor reported no %q check:\n%s", podbot.NestedCheckName, out)
	return podbot.Check{}
}

// TestRunNestedContainers runs `podman run --rm` inside the sandbox, under
// podbot run, with the privileged profile where the engine can start
// privileged containers (it must fail plainly where it cannot), and checks
// that the sandbox sees no engine socket. It then takes podbot doctor's
// verdict for the minimal profile and checks it against what happens.
func TestRunNestedContainers(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		requireAgentImage(t, ctx, e)

		privDoctor := doctorNestedVerdict(t, ctx, e, "[sandbox]\nprivileged = true\n")
		code, out := nestedRun(t, ctx, e, "nestpriv", "privileged = true")
		privWorks := strings.Contains(privDoctor.Detail, "privileged profile: works")
		switch {
		case privWorks && code != 0:
			t.Errorf("doctor says nested containers work with the privileged profile, but podbot run exit %d:\n%s", code, out)
		case privWorks && !strings.Contains(out, "nested-run-ok"):
			t.Errorf("the inner podman run printed nothing:\n%s", out)
		case !privWorks && (code == 0 || !strings.Contains(out, "privileged")):
			t.Errorf("doctor says the privileged profile cannot work here; want a failure naming it, got exit %d:\n%s", code, out)
		}
		if strings.Contains(out, "engine socket visible") || strings.Contains(out, "engine variable visible") {
			t.Errorf("the sandbox can see the host's engine:\n%s", out)
		}
		if privWorks && e.Name == "podman" && code != 0 {
			t.Errorf("nested containers must work with the privileged profile on Podman")
		}

		// The minimal profile, as the doctor describes it for this engine.
		minimal := `user = "agent"`
		if e.Name == "docker" {
			minimal += "\nmount_dev_fuse = true"
		}
		verdict := doctorNestedVerdict(t, ctx, e, "[sandbox]\n"+minimal+"\n")
		minWorks := strings.Contains(verdict.Detail, "minimal profile: works")
		code, out = nestedRun(t, ctx, e, "nestmin", minimal)
		if minWorks != (code == 0 && strings.Contains(out, "nested-run-ok")) {
			t.Errorf("doctor's verdict %q (status %s) does not match the minimal profile's outcome: exit %d\n%s",
				verdict.Detail, verdict.Status, code, out)
		}
		if minWorks && verdict.Status != podbot.CheckOK {
			t.Errorf("doctor warns (%s) although the configured minimal profile works: %s", verdict.Status, verdict.Fix)
		}
		// As root the minimal profile cannot run nested containers, and the
		// doctor says so.
		rootVerdict := doctorNestedVerdict(t, ctx, e, "")
		if rootVerdict.Status != podbot.CheckWarn {
			t.Errorf("doctor does not warn for the minimal profile as root: %+v", rootVerdict)
		}
		if code, out := nestedRun(t, ctx, e, "nestroot", ""); code == 0 {
			t.Errorf("nested containers as root in the minimal profile worked, against the doctor's verdict:\n%s", out)
		}
		t.Logf("%s: privileged %v, minimal %v: %s", e.Name, privWorks, minWorks, verdict.Detail)
	})
}
