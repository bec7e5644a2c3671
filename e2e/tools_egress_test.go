//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/sandbox"
	"github.com/podbot/podbot/tools"
)

// reachScript tries each target from inside the sandbox, ignoring any
// proxy: "tcp=HOST:PORT" connects over TCP, "unix=PATH" to a unix socket.
// It prints "TARGET ok" when the connection was made, else "TARGET
// blocked ERROR".
const reachScript = `
import socket, sys
for a in sys.argv[1:]:
    kind, _, target = a.partition("=")
    if kind == "unix":
        s, addr = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), target
    else:
        host, port = target.rsplit(":", 1)
        s, addr = socket.socket(socket.AF_INET, socket.SOCK_STREAM), (host, int(port))
    s.settimeout(3)
    try:
        s.connect(addr); print(a, "ok")
    except Exception as e:
        print(a, "blocked", type(e).__name__, e)
    finally:
        s.close()
`

// toolsEgressID is a tool session id for this run, engine and purpose (two
// letters): its containers are podbot-tools-<engine><purpose><run digits>-N
// (sandbox.ContainerName keeps 12 characters of the id).
func toolsEgressID(e engineUnderTest, purpose string) string {
	return fmt.Sprintf("%s-%s-%s", e.Name, purpose, strings.TrimPrefix(suite.runID, "e2e"))
}

// toolsEgressConfig is a tool-session configuration with tools.network =
// "allowlist", no preset, and the given network.allow rules and
// network.resolve pins.
func toolsEgressConfig(allow []string, resolve map[string]string) config.Config {
	cfg := config.Default()
	cfg.Tools.Image = toolsImage
	cfg.Tools.Network = podbot.ToolsNetworkAllowlist
	cfg.Network.Presets = nil
	cfg.Network.Allow = allow
	for h, a := range resolve {
		cfg.Network.Resolve = append(cfg.Network.Resolve, h+"="+a)
	}
	return cfg
}

// openToolsEgressSession opens an engine tool session with cfg whose
// egress directories go under rt, closed (if the test did not) at cleanup.
func openToolsEgressSession(t *testing.T, ctx context.Context, conn *engine.Conn, cfg config.Config, rt, id, sidecar string, onEvent func(sandbox.Event)) podbot.ToolSession {
	t.Helper()
	s, err := podbot.NewToolSession(ctx, conn, podbot.ToolSessionOptions{Config: cfg, SidecarPath: sidecar,
		WorkspaceRoot: t.TempDir(), RuntimeDir: rt, ID: id, OnEvent: onEvent})
	if err != nil {
		t.Fatalf("NewToolSession: %v", err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Close(cctx)
	})
	return s
}

// noToolsEgressLeft fails the test unless tool container name, its egress
// proxy and internal network, and its egress directory under rt are gone.
func noToolsEgressLeft(t *testing.T, ctx context.Context, conn *engine.Conn, rt, name, when string) {
	t.Helper()
	for _, c := range []string{name, egressnet.ProxyName(name)} {
		if _, err := conn.Inspect(ctx, c, false); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("%s: container %s left behind: %v", when, c, err)
		}
	}
	if _, err := conn.InspectNetwork(ctx, egressnet.NetworkName(name)); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("%s: network %s left behind: %v", when, egressnet.NetworkName(name), err)
	}
	dirs, err := egressnet.DirsFor(rt, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dirs.Root); !os.IsNotExist(err) {
		t.Errorf("%s: egress directory %s left behind: %v", when, dirs.Root, err)
	}
}

// TestToolsEgressAllowlistEngine plays a model driving an engine tool
// session with tools.network = "allowlist" through its shell tool, on both
// engines. The sandbox is on its internal network alone, with the proxy
// variables; through the proxy an allowed host (pinned to the outside
// servers on the bridge gateway, exact rules) answers over HTTP and
// HTTPS, while a host not on the list, the outside server by its address,
// and names that only a wildcard allows pinned to the metadata address
// and loopback are refused with 403. Ignoring the proxy, nothing answers:
// not the outside server, the engine host on either gateway, the metadata
// address, the engine's TCP ports, DNS, IPv6 (attackScript), nor the
// engine's socket, which is not in the sandbox. podbot network show, log,
// allow (in force at once) and deny work on the session's container by
// name. Close leaves no container, proxy, network or egress directory.
func TestToolsEgressAllowlistEngine(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		conn := connectEngine(t, ctx, e)
		gw := bridgeGateway(t, ctx, e)

		port := outsideHTTP(t)
		tlsSrv := newRecordingTLS(t)
		tlsPort := tlsSrv.port()

		rt := runtimeDir(t)
		cfg := toolsEgressConfig(
			[]string{fmt.Sprintf("allowed.test:%d", port), fmt.Sprintf("allowed.test:%d", tlsPort), fmt.Sprintf("*.wild.test:%d", port)},
			map[string]string{"allowed.test": gw, "denied.test": gw, "meta.wild.test": "169.254.169.254", "lo.wild.test": "127.0.0.1"})
		cfg.Network.Mode = config.NetworkNone // agent sandboxes' mode: not the tool session's
		s := openToolsEgressSession(t, ctx, conn, cfg, rt, toolsEgressID(e, "eg"), sidecarBin(t), nil)

		allowed := fmt.Sprintf("http://allowed.test:%d/", port)
		allowedTLS := fmt.Sprintf("https://allowed.test:%d/", tlsPort)
		denied := fmt.Sprintf("http://denied.test:%d/", port)
		refused := []string{denied, fmt.Sprintf("http://%s:%d/", gw, port), fmt.Sprintf("http://meta.wild.test:%d/", port), fmt.Sprintf("http://lo.wild.test:%d/", port)}
		res, err := shellCall(ctx, s, 90, append([]string{"python3", "-c", fetchScript, allowed, allowedTLS}, refused...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s, through the proxy:\n%s%s", e.Name, res.Stdout, res.Stderr)
		lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
		if res.ExitCode != 0 || len(lines) != 2+len(refused) {
			t.Fatalf("fetch script: %+v", res)
		}
		for i, want := range []string{allowed, allowedTLS} {
			if !strings.HasPrefix(lines[i], want+" 200 outside allowed.test") {
				t.Errorf("%s: not answered through the proxy: %s", want, lines[i])
			}
		}
		for i, u := range refused {
			if l := lines[2+i]; !strings.HasPrefix(l, u+" refused") || !strings.Contains(l, "403") {
				t.Errorf("%s: not refused by the proxy with 403: %s", u, l)
			}
		}

		// The sandbox is on its internal network alone, with the proxy
		// variables, and its proxy runs.
		name := s.Info().ContainerName
		igw := checkAllowlistPlumbing(t, ctx, e, conn, s.Info().ContainerID, name)

		// Ignoring the proxy, nothing answers.
		attack, err := shellCall(ctx, s, 120, "env", "-u", "HTTP_PROXY", "-u", "HTTPS_PROXY", "-u", "http_proxy", "-u", "https_proxy",
			"python3", "-c", attackScript, gw, igw, fmt.Sprint(port))
		if err != nil {
			t.Fatal(err)
		}
		sock := strings.TrimPrefix(e.Endpoint, "unix://")
		targets := []string{"tcp=" + net.JoinHostPort(gw, fmt.Sprint(port)), "tcp=" + net.JoinHostPort(gw, fmt.Sprint(tlsPort)),
			"tcp=169.254.169.254:80", "tcp=" + gw + ":2375", "tcp=" + gw + ":2376", "tcp=" + igw + ":2375",
			"unix=" + sock, "unix=/run/podman/podman.sock", "unix=/var/run/docker.sock", "unix=/run/docker.sock"}
		direct, err := shellCall(ctx, s, 120, append([]string{"python3", "-c", reachScript}, targets...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s, around the proxy:\n%s%s%s", e.Name, attack.Stdout, direct.Stdout, direct.Stderr)
		if attack.ExitCode != 0 || !strings.Contains(attack.Stdout, "tcp6-loopback-host") || direct.ExitCode != 0 ||
			strings.Count(direct.Stdout, "\n") != len(targets) {
			t.Fatalf("probe scripts failed: %+v\n%+v", attack, direct)
		}
		for _, line := range strings.Split(strings.TrimSpace(attack.Stdout+direct.Stdout), "\n") {
			if strings.Contains(line, " ok") {
				t.Errorf("%s: the tool sandbox got out: %s", e.Name, line)
			}
		}

		// podbot network works on the session's container.
		show := runPodbot(t, ctx, e, "network", "show", "--json", name)
		var np podbot.NetworkPolicy
		decodeJSON(t, show.Stdout, &np)
		if show.Code != 0 || np.Sandbox != name || np.Mode != "allowlist" || np.Policy == nil || len(np.Policy.Rules) != 3 ||
			np.Policy.Rules[0].Host != "allowed.test" || np.Policy.Rules[0].Source != podbot.EgressSourceConfig {
			t.Fatalf("network show: %d %+v\n%s", show.Code, np, show.Stderr)
		}
		waitLogEntry(t, ctx, e, name, "the refusal of denied.test", func(le egress.LogEntry) bool {
			return le.Host == "denied.test" && le.Port == port && le.Decision == egress.DecisionDeny
		})
		if r := runPodbot(t, ctx, e, "network", "allow", name, fmt.Sprintf("denied.test:%d", port)); r.Code != 0 {
			t.Fatalf("network allow: %d %s", r.Code, r.Stderr)
		}
		if res, err := shellCall(ctx, s, 60, "python3", "-c", fetchScript, denied); err != nil || !strings.Contains(res.Stdout, " 200 outside denied.test") {
			t.Fatalf("after network allow: %+v, %v", res, err)
		}
		if r := runPodbot(t, ctx, e, "network", "deny", name, fmt.Sprintf("denied.test:%d", port)); r.Code != 0 {
			t.Fatalf("network deny: %d %s", r.Code, r.Stderr)
		}
		if res, err := shellCall(ctx, s, 60, "python3", "-c", fetchScript, denied); err != nil || !strings.Contains(res.Stdout, " refused") {
			t.Fatalf("after network deny: %+v, %v", res, err)
		}

		if err := s.Close(ctx); err != nil {
			t.Fatalf("close: %v", err)
		}
		noToolsEgressLeft(t, ctx, conn, rt, name, "after Close")
	})
}

// TestToolsEgressFailedStartsLeaveNothing: on both engines, a tool
// session's first call whose start fails (a sidecar whose egress proxy
// cannot run) or whose caller gives up mid-start (the context cancelled
// once the container exists, as Ctrl-C does) fails, and leaves no
// container, proxy, network or egress directory behind, before Close.
// podbot rm of the session's container removes its plumbing too, the
// next call gets a new container with a proxy of its own, and Close
// leaves nothing.
func TestToolsEgressFailedStartsLeaveNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		conn := connectEngine(t, ctx, e)
		rt := runtimeDir(t)
		cfg := toolsEgressConfig([]string{"allowed.test:443"}, nil)

		// /bin/false as podbot-sidecar: the proxy exits at once.
		id := toolsEgressID(e, "fa")
		s := openToolsEgressSession(t, ctx, conn, cfg, rt, id, "/bin/false", nil)
		if _, err := shellCall(ctx, s, 0, "true"); err == nil || !strings.Contains(err.Error(), "egress proxy") {
			t.Fatalf("a start whose proxy cannot run: %v, want the proxy's failure", err)
		}
		noToolsEgressLeft(t, ctx, conn, rt, sandbox.ContainerName(id, 1), "after a failed start")

		// Cancelled once the container exists (its network and proxy made,
		// netlock run), before the sidecar is reached.
		id = toolsEgressID(e, "ca")
		cctx, ccancel := context.WithCancel(ctx)
		defer ccancel()
		s = openToolsEgressSession(t, ctx, conn, cfg, rt, id, sidecarBin(t), func(ev sandbox.Event) {
			if ev.Kind == sandbox.EventCreated {
				if _, err := conn.Inspect(ctx, egressnet.ProxyName(ev.Container), false); err != nil {
					t.Errorf("the created container %s has no proxy: %v", ev.Container, err)
				}
				ccancel()
			}
		})
		if _, err := shellCall(cctx, s, 0, "true"); err == nil {
			t.Fatal("the call whose context was cancelled mid-start succeeded")
		}
		noToolsEgressLeft(t, ctx, conn, rt, sandbox.ContainerName(id, 1), "after a cancelled start")

		// The session still works, with a new container and proxy.
		res, err := shellCall(ctx, s, 0, "sh", "-c", `echo "$HTTPS_PROXY"`)
		if err != nil || !strings.HasPrefix(res.Stdout, "http://") {
			t.Fatalf("the session after a cancelled start: %+v, %v", res, err)
		}
		// podbot rm takes the container's proxy, network and directory
		// along; the session's next call starts a new container with its
		// own.
		name := s.Info().ContainerName
		if r := runPodbot(t, ctx, e, "rm", "--force", name); r.Code != 0 {
			t.Fatalf("podbot rm: %d %s", r.Code, r.Stderr)
		}
		noToolsEgressLeft(t, ctx, conn, rt, name, "after podbot rm")
		res, err = shellCall(ctx, s, 0, "sh", "-c", `echo "$HTTPS_PROXY"`)
		if next := s.Info().ContainerName; err != nil || !strings.HasPrefix(res.Stdout, "http://") || next == name {
			t.Fatalf("the session after podbot rm: %+v, %v, container %s", res, err, next)
		}
		name = s.Info().ContainerName
		if _, err := conn.Inspect(ctx, egressnet.ProxyName(name), false); err != nil {
			t.Fatalf("the new container's proxy: %v", err)
		}
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		noToolsEgressLeft(t, ctx, conn, rt, name, "after Close")
	})
}

// toolsContainerRe finds the tool container's name in podbot's debug log.
var toolsContainerRe = regexp.MustCompile(`container=(podbot-tools-[a-z0-9]+-[0-9]+)`)

// TestToolsEgressAllowlistCLI: podbot tools call with tools.network =
// "allowlist" in the configuration file runs the shell tool behind the
// egress proxy (the allowed host answers, the other is refused), keeps
// its egress directory under $XDG_RUNTIME_DIR (where it cannot make one,
// the call fails naming it), and leaves no container, proxy, network or
// directory when it exits. On both engines.
func TestToolsEgressAllowlistCLI(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		conn := connectEngine(t, ctx, e)
		gw := bridgeGateway(t, ctx, e)
		port := outsideHTTP(t)

		cfg := fmt.Sprintf(`[tools]
image = %q
network = "allowlist"

[network]
presets = []
allow = ["allowed.test:%d"]
resolve = ["allowed.test=%s", "denied.test=%s"]
`, toolsImage, port, gw, gw)
		allowed, denied := fmt.Sprintf("http://allowed.test:%d/", port), fmt.Sprintf("http://denied.test:%d/", port)
		args, err := json.Marshal(tools.ShellParams{Command: []string{"python3", "-c", fetchScript, allowed, denied}})
		if err != nil {
			t.Fatal(err)
		}
		call := func(rt string) (string, string, int) {
			cmd := podbotCmd(t, ctx, e, cfg, "--log-level", "debug", "tools", "call", "shell_execute", "--args", string(args))
			cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+rt)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			code := exitStatus(t, cmd.Run(), cmd.Args)
			return out.String(), errOut.String(), code
		}
		// The egress directory goes under $XDG_RUNTIME_DIR: where podbot
		// cannot make it, the call fails there.
		blocked := runtimeDir(t)
		if err := os.WriteFile(filepath.Join(blocked, "podbot"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, stderr, code := call(blocked); code == 0 || !strings.Contains(stderr, filepath.Join(blocked, "podbot")) {
			t.Fatalf("with $XDG_RUNTIME_DIR/podbot a file: exit %d, want a failure naming it\n%s", code, stderr)
		}

		rt := runtimeDir(t)
		stdout, stderr, code := call(rt)
		if code != 0 {
			t.Fatalf("podbot tools call: exit %d\n%s", code, stderr)
		}
		var res tools.ShellResult
		decodeJSON(t, stdout, &res)
		lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
		if res.ExitCode != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], allowed+" 200 outside allowed.test") ||
			!strings.HasPrefix(lines[1], denied+" refused") || !strings.Contains(lines[1], "403") {
			t.Fatalf("want allowed.test answered and denied.test refused with 403; got %+v", res)
		}
		m := toolsContainerRe.FindStringSubmatch(stderr)
		if m == nil {
			t.Fatalf("no tool container named in the debug log:\n%s", stderr)
		}
		noToolsEgressLeft(t, ctx, conn, rt, m[1], "after podbot tools call")
		if _, err := os.Stat(filepath.Join(rt, "podbot")); !os.IsNotExist(err) {
			t.Errorf("$XDG_RUNTIME_DIR/podbot after the call: %v; want the egress directories gone", err)
		}
	})
}
