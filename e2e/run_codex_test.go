//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// refusingProxy is an HTTP(S) proxy that forwards nothing and records every
// host a client tried to reach through it.
type refusingProxy struct {
	mu    sync.Mutex
	hosts []string
}

func (p *refusingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.hosts = append(p.hosts, r.Host)
	p.mu.Unlock()
	http.Error(w, "podbot e2e: no traffic allowed here", http.StatusForbidden)
}

func (p *refusingProxy) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.hosts...)
}

// TestRunCodexWithMockProvider runs the real Codex CLI in the sandbox under
// podbot run against aimock on the host: one request with a tool call, the
// tool's output sent back, the final answer printed, exit 0. Every other
// host Codex could try goes through a refusing proxy, which must see none.
func TestRunCodexWithMockProvider(t *testing.T) {
	codexBin := os.Getenv("PODBOT_E2E_CODEX_BIN")
	if codexBin == "" {
		t.Fatal("PODBOT_E2E_CODEX_BIN is not set: source <(scripts/peers.sh env) (make test-e2e does)")
	}
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		root, ws := stubWorkspace(t)
		gw := bridgeGateway(t, ctx, e)
		port := startAimock(t, ctx)
		proxy := &refusingProxy{}
		ln, err := net.Listen("tcp4", "0.0.0.0:0")
		if err != nil {
			t.Fatal(err)
		}
		psrv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = psrv.Serve(ln) }()
		t.Cleanup(func() { _ = psrv.Close() })
		proxyURL := fmt.Sprintf("http://%s:%d", gw, ln.Addr().(*net.TCPAddr).Port)

		copyFile(t, codexBin, filepath.Join(ws, "codex"))
		codexHome := filepath.Join(ws, ".codex")
		if err := os.Mkdir(codexHome, 0o755); err != nil {
			t.Fatal(err)
		}
		conf, err := exec.CommandContext(ctx, "scripts/peers.sh", "codex-config", fmt.Sprintf("http://%s:%s/v1", gw, port)).Output()
		if err != nil {
			// The suite runs in e2e/; the script lives one level up.
			conf, err = exec.CommandContext(ctx, "../scripts/peers.sh", "codex-config", fmt.Sprintf("http://%s:%s/v1", gw, port)).Output()
		}
		if err != nil {
			t.Fatalf("scripts/peers.sh codex-config: %v", err)
		}
		if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), conf, 0o644); err != nil {
			t.Fatal(err)
		}
		giveToAgent(t, ws)

		name := testName(e, "runcodex")
		removeOnCleanup(t, e, name)
		cfg := fmt.Sprintf(`image = "localhost/podbot-sandbox:latest"
[agent]
kind = "custom"
command = "/workspace/codex"
args = ["exec", "--skip-git-repo-check", "podbot-e2e-tool-call"]
env_allowlist = ["CODEX_HOME", "AIMOCK_API_KEY", "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"]
[creds]
copy_claude = false
copy_codex = false
[workspace]
allowed_roots = [%q]
[network]
# This test routes Codex through its own refusing proxy (HTTPS_PROXY in the
# agent's environment) to see every host it tries: podbot's egress proxy
# would stand in the way, so the sandbox takes the explicit escape hatch.
mode = "open"
`, root)
		env := newRunEnv(t, cfg, "CODEX_HOME=/workspace/.codex", "AIMOCK_API_KEY=dummy-key",
			"HTTPS_PROXY="+proxyURL, "HTTP_PROXY="+proxyURL, "ALL_PROXY="+proxyURL, "NO_PROXY="+gw)
		cmd := env.command(t, ctx, e, "run", "--rm", "--name", name, "--workspace", ws)
		var out, errOut bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, &out, &errOut
		code := exitStatus(t, cmd.Run(), cmd.Args)
		if code != 0 {
			t.Fatalf("podbot run codex: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
		}
		if !strings.Contains(out.String(), "podbot-e2e-done") || !strings.Contains(out.String()+errOut.String(), "podbot-e2e-42") {
			t.Errorf("codex did not finish the tool-call exchange\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
		}
		if hosts := proxy.seen(); len(hosts) > 0 {
			t.Errorf("codex tried to reach other hosts: %v", hosts)
		}
		if rows := containersNamed(t, ctx, e, name); len(rows) > 0 {
			t.Errorf("--rm left container %s (%s)", name, rows[0].State)
		}
		t.Logf("codex in the sandbox on %s answered: %s", e.Name, lastLine(out.String()))
	})
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
