//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"

	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
)

// outsideHTTP starts a plain HTTP server on every host address that
// answers "outside HOST" (the Host header it was asked for), standing for
// a host on the internet, and returns its port. It stops when t ends.
func outsideHTTP(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "outside "+r.Host) }),
		ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// checkAllowlistPlumbing fails t unless the allowlist sandbox container id
// (named name) is on its internal network alone with the proxy variables
// in its environment, that network is internal on dockerd and routed on
// Podman (closed by netlock there; see podbot's internalNetworks), and
// its egress proxy runs. It returns the internal network's gateway.
func checkAllowlistPlumbing(t *testing.T, ctx context.Context, e engineUnderTest, conn *engine.Conn, id, name string) string {
	t.Helper()
	in, err := conn.Inspect(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if nets := in.NetworkSettings.Networks; len(nets) != 1 || nets[egressnet.NetworkName(name)] == nil {
		t.Fatalf("sandbox networks = %v, want only %s", keys(nets), egressnet.NetworkName(name))
	}
	if env := strings.Join(in.Config.Env, "\n"); !strings.Contains(env, "HTTPS_PROXY=http://") || !strings.Contains(env, "NO_PROXY=localhost,127.0.0.1") {
		t.Fatalf("sandbox env lacks the proxy variables:\n%s", env)
	}
	nw, err := e.API.NetworkInspect(ctx, egressnet.NetworkName(name), network.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if nw.Internal != (e.Name == "docker") {
		t.Fatalf("network %s: internal = %v on %s", nw.Name, nw.Internal, e.Name)
	}
	igw := ""
	for _, c := range nw.IPAM.Config {
		igw = c.Gateway
	}
	if igw == "" {
		t.Fatalf("network %s has no gateway: %+v", nw.Name, nw.IPAM.Config)
	}
	if pin, err := conn.Inspect(ctx, egressnet.ProxyName(name), false); err != nil || !pin.State.Running {
		t.Fatalf("proxy %s not running: %v", egressnet.ProxyName(name), err)
	}
	return igw
}
