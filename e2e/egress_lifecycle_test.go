//go:build e2e

package e2e

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// directScript tries the engine host from inside the sandbox, past the
// proxy: TCP to the internal network's gateway (the host) and to the
// bridge's gateway. It prints "ok" for an attempt that got through.
const directScript = `
import socket, sys
for a in sys.argv[1:]:
    s = socket.socket(); s.settimeout(3)
    try:
        s.connect((a, 22)); print(a, "ok")
    except ConnectionRefusedError:
        print(a, "ok (refused by the host: a route exists)")
    except Exception as e:
        print(a, "blocked", e)
    s.close()
`

// TestEgressLifecycle: a detached allowlist sandbox (podbot create) keeps
// its proxy running; podbot network allow/deny change its policy file in
// place and show prints it with the sources; stop stops the proxy with the
// sandbox; start starts both and closes the new network namespace again
// (the attack after a restart fails too); rm removes the proxy, network
// and directory. On both engines.
func TestEgressLifecycle(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		conn := connectEngine(t, ctx, e)
		rt := runtimeDir(t)
		name := testName(e, "egresslife")
		removeOnCleanup(t, e, name)
		t.Cleanup(func() {
			_ = e.API.ContainerRemove(context.Background(), egressnet.ProxyName(name), container.RemoveOptions{Force: true})
			_ = e.API.NetworkRemove(context.Background(), egressnet.NetworkName(name))
		})
		cfg := launchConfig()
		res, err := podbot.Create(ctx, conn, podbot.CreateOptions{Config: cfg, Name: name, SidecarPath: sidecarBin(t), RuntimeDir: rt,
			Egress: &launchplan.Egress{Mode: egress.ModeAllowlist, Policy: egress.Policy{
				Rules: []egress.Rule{{Host: "api.example.com", Source: "preset agent"}}}}})
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		proxyRunning := func() bool {
			in, err := conn.Inspect(ctx, egressnet.ProxyName(name), false)
			return err == nil && in.State.Running
		}
		if !proxyRunning() {
			t.Fatal("the proxy is not running after a detached create")
		}
		nw, err := conn.InspectNetwork(ctx, egressnet.NetworkName(name))
		if err != nil || nw.Internal != (e.Name == "docker") || nw.Labels[launchplan.LabelManaged] != "true" || nw.Labels[egressnet.LabelSandbox] != name {
			t.Fatalf("network %+v, %v", nw, err)
		}
		gw := bridgeGateway(t, ctx, e)
		attack := func(when string) {
			t.Helper()
			out := mustExec(t, ctx, e, res.Name, "python3", "-c", directScript, nw.Gateways[0].String(), gw)
			t.Logf("%s: %s", when, out)
			if strings.Contains(out, " ok") {
				t.Fatalf("%s: the sandbox reaches the engine host:\n%s", when, out)
			}
		}
		attack("after create")

		// Live policy changes through the CLI.
		if r := runPodbot(t, ctx, e, "network", "allow", name, "outside.test:8443"); r.Code != 0 {
			t.Fatalf("network allow: %d %s", r.Code, r.Stderr)
		}
		if r := runPodbot(t, ctx, e, "network", "deny", name, "api.example.com"); r.Code != 0 {
			t.Fatalf("network deny: %d %s", r.Code, r.Stderr)
		}
		r := runPodbot(t, ctx, e, "network", "show", name)
		if r.Code != 0 || !strings.Contains(r.Stdout, "outside.test:8443") || !strings.Contains(r.Stdout, "preset agent") ||
			!strings.Contains(r.Stdout, "deny:") || !strings.Contains(r.Stdout, podbot.SourceLive) {
			t.Fatalf("network show: %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		dirs, _ := egressnet.DirsFor(rt, name)
		pol, err := egressnet.ReadPolicy(dirs.PolicyPath())
		if err != nil || len(pol.Rules) != 2 || len(pol.Deny) != 1 {
			t.Fatalf("policy file after allow/deny: %+v, %v", pol, err)
		}
		if r := runPodbot(t, ctx, e, "network", "allow", name, "bad host!"); r.Code == 0 || !strings.Contains(r.Stderr, "bad host!") {
			t.Fatalf("a malformed rule was accepted: %d %s", r.Code, r.Stderr)
		}
		// The log is the proxy's; a line written to it reads back.
		if err := os.WriteFile(dirs.LogPath(), []byte(`{"time":"t1","host":"outside.test","port":8443,"decision":"allow"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := runPodbot(t, ctx, e, "network", "log", name); r.Code != 0 || !strings.Contains(r.Stdout, "outside.test:8443") {
			t.Fatalf("network log: %d %q %s", r.Code, r.Stdout, r.Stderr)
		}

		// Stop and start: the proxy follows, the namespace is closed again.
		if _, err := podbot.Stop(ctx, conn, name, podbot.StopOptions{Timeout: time.Second}); err != nil {
			t.Fatalf("stop: %v", err)
		}
		if proxyRunning() {
			t.Fatal("the proxy still runs after stop")
		}
		if _, err := podbot.Start(ctx, conn, name, podbot.StartOptions{RuntimeDir: rt}); err != nil {
			t.Fatalf("start: %v", err)
		}
		if !proxyRunning() {
			t.Fatal("the proxy does not run after start")
		}
		attack("after stop and start")

		if r := runPodbot(t, ctx, e, "rm", "-f", name); r.Code != 0 {
			t.Fatalf("rm: %d %s", r.Code, r.Stderr)
		}
		if _, err := conn.Inspect(ctx, egressnet.ProxyName(name), false); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("proxy after rm: %v", err)
		}
		if _, err := conn.InspectNetwork(ctx, egressnet.NetworkName(name)); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("network after rm: %v", err)
		}
		if _, err := os.Stat(dirs.Root); !os.IsNotExist(err) {
			t.Errorf("egress directory after rm: %v", err)
		}
	})
}

// TestEgressPruneFindsLeftovers: a leftover internal network whose sandbox
// is gone (a crash) is removed by podbot prune; a proxy whose sandbox is
// gone but that is younger than prune's grace is not (a concurrent launch
// may still be making that sandbox).
func TestEgressPruneFindsLeftovers(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		conn := connectEngine(t, ctx, e)
		name := testName(e, "egressprune")
		// A leftover as a crash would leave it: a labelled internal network
		// and no sandbox.
		labels := map[string]string{launchplan.LabelManaged: "true", egressnet.LabelSandbox: name, egressnet.LabelRole: egressnet.RoleNetwork}
		if _, err := e.API.NetworkCreate(ctx, egressnet.NetworkName(name), network.CreateOptions{Driver: "bridge", Internal: true, Labels: labels}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.API.NetworkRemove(context.Background(), egressnet.NetworkName(name)) })
		r := runPodbot(t, ctx, e, "prune")
		if r.Code != 0 {
			t.Fatalf("prune: %d %s", r.Code, r.Stderr)
		}
		if !strings.Contains(r.Stdout, "removed egress proxy and network of "+name) {
			t.Fatalf("prune did not report %s's network:\n%s", name, r.Stdout)
		}
		if _, err := conn.InspectNetwork(ctx, egressnet.NetworkName(name)); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("network after prune: %v", err)
		}

		// A whole allowlist sandbox removed with the engine's own API.
		rt := runtimeDir(t)
		gone := testName(e, "egressgone")
		res, err := podbot.Create(ctx, conn, podbot.CreateOptions{Config: launchConfig(), Name: gone, SidecarPath: sidecarBin(t), RuntimeDir: rt,
			Egress: &launchplan.Egress{Mode: egress.ModeAllowlist}})
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		removeOnCleanup(t, e, gone)
		if err := e.API.ContainerRemove(ctx, res.ID, container.RemoveOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		// A proxy younger than prune's grace (a minute) is left alone: a
		// concurrent launch may not have made its sandbox yet.
		r = runPodbot(t, ctx, e, "prune", "--dry-run")
		if r.Code != 0 || strings.Contains(r.Stdout, "egress proxy and network of "+gone) {
			t.Fatalf("prune --dry-run offered a proxy younger than its grace: %d\n%s", r.Code, r.Stdout)
		}
	})
}
