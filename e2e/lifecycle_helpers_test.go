//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
)

// podbotCmd prepares a podbot invocation against engine e with an isolated
// config file holding cfgTOML.
func podbotCmd(t *testing.T, ctx context.Context, e engineUnderTest, cfgTOML string, args ...string) *exec.Cmd {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte(cfgTOML), 0o600); err != nil {
		t.Fatal(err)
	}
	full := append([]string{"--engine-socket", e.Endpoint}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(suite.bin, "podbot"), full...)
	cmd.Env = append(os.Environ(), "PODBOT_CONFIG_PATH="+cfg)
	return cmd
}

// runPodbotIn runs podbot with stdin and returns its result.
func runPodbotIn(t *testing.T, ctx context.Context, e engineUnderTest, stdin io.Reader, args ...string) result {
	t.Helper()
	cmd := podbotCmd(t, ctx, e, "", args...)
	cmd.Stdin = stdin
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	return result{Code: exitStatus(t, cmd.Run(), args), Stdout: out.String(), Stderr: errOut.String()}
}

// exitStatus turns cmd.Run's error into an exit status.
func exitStatus(t *testing.T, err error, args []string) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("podbot %v: %v", args, err)
	}
	return ee.ExitCode()
}

// testName is a container name unique to this run, engine and purpose.
func testName(e engineUnderTest, purpose string) string {
	return fmt.Sprintf("pbt-%s-%s-%s", suite.runID, e.Name, purpose)
}

// createSandbox runs podbot create with args, registers its removal, and
// returns the container name.
func createSandbox(t *testing.T, ctx context.Context, e engineUnderTest, purpose string, args ...string) string {
	t.Helper()
	name := testName(e, purpose)
	removeOnCleanup(t, e, name)
	res := runPodbot(t, ctx, e, append([]string{"create", "--name", name}, args...)...)
	if res.Code != 0 {
		t.Fatalf("podbot create %v: exit %d\n%s", args, res.Code, res.Stderr)
	}
	if got := strings.TrimSpace(res.Stdout); got != name {
		t.Fatalf("podbot create printed %q, want the name %q", got, name)
	}
	return name
}

// removeOnCleanup force-removes the named container when the test ends,
// with the egress proxy and network an allowlist sandbox of that name has.
func removeOnCleanup(t *testing.T, e engineUnderTest, name string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		dir, egName := "", name
		if in, err := e.API.ContainerInspect(ctx, name); err == nil && in.Config != nil {
			dir = in.Config.Labels["podbot.egress.dir"]
			if n := in.Config.Labels["podbot.egress.name"]; n != "" && filepath.Base(n) == n && n != ".." {
				egName = n // a claimed pool member's, named after the member
			}
		}
		_ = e.API.ContainerRemove(ctx, name, container.RemoveOptions{Force: true})
		_ = e.API.ContainerRemove(ctx, "podbot-egress-"+egName, container.RemoveOptions{Force: true})
		_ = e.API.NetworkRemove(ctx, "podbot-net-"+egName)
		if dir != "" && filepath.Base(dir) == egName && filepath.Base(filepath.Dir(dir)) == "egress" {
			_ = os.RemoveAll(dir)
		}
	})
}

// containersNamed lists every container (running or not) whose name
// contains name.
func containersNamed(t *testing.T, ctx context.Context, e engineUnderTest, name string) []container.Summary {
	t.Helper()
	rows, err := e.API.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("name", name))})
	if err != nil {
		t.Fatalf("list containers named %s: %v", name, err)
	}
	return rows
}

// mustExec runs a command in a container through podbot exec and returns
// its stdout, failing the test on a non-zero exit.
func mustExec(t *testing.T, ctx context.Context, e engineUnderTest, name string, cmd ...string) string {
	t.Helper()
	res := runPodbot(t, ctx, e, append([]string{"exec", "-T", name, "--"}, cmd...)...)
	if res.Code != 0 {
		t.Fatalf("podbot exec %v: exit %d\nstdout: %s\nstderr: %s", cmd, res.Code, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

// withoutProxies drops the egress proxy containers (label
// podbot.egress.role=proxy), whose names contain their sandbox's.
func withoutProxies(rows []container.Summary) []container.Summary {
	var out []container.Summary
	for _, r := range rows {
		if r.Labels["podbot.egress.role"] != "proxy" {
			out = append(out, r)
		}
	}
	return out
}
