//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
)

// TestCreateVaultEnvSecret: podbot create with an env: secret gives the
// detached sandbox a placeholder; podbot exec sends it through the proxy
// to the secret's host, which receives the real value; after podbot stop
// and podbot start (the proxy restarted from its egress directory with
// its secrets file) it still does. The real value is in neither the
// sandbox's nor the proxy's inspect. Before, create refused [[secrets]].
func TestCreateVaultEnvSecret(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		gw := bridgeGateway(t, ctx, e)
		real := "sk-vault-create-" + suite.runID + "-" + e.Name + "-REALVALUE"

		upCA, caFile := upstreamCA(t)
		up := &upstreamTLS{seen: map[string][]string{}}
		ln, err := net.Listen("tcp4", "0.0.0.0:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: up, ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{
			GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) { return upCA.Leaf(h.ServerName) }}}
		go func() { _ = srv.ServeTLS(ln, "", "") }()
		defer srv.Close()
		port := ln.Addr().(*net.TCPAddr).Port
		host := fmt.Sprintf("vault.test:%d", port)

		cfg := fmt.Sprintf(`image = %q
[network]
mode = "allowlist"
presets = []
allow = [%q]
resolve = ["vault.test=%s"]
upstream_ca = %q
[[secrets]]
name = "e2e-create"
source = "env:PODBOT_E2E_CREATE_KEY"
hosts = [%q]
header = "x-api-key: {}"
env = "VAULT_KEY"
`, sandboxImage, host, gw, caFile, host)
		name := testName(e, "vaultcreate")
		removeOnCleanup(t, e, name)
		run := func(args ...string) result {
			t.Helper()
			cmd := podbotCmd(t, ctx, e, cfg, args...)
			cmd.Env = append(cmd.Env, "PODBOT_E2E_CREATE_KEY="+real)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			return result{Code: exitStatus(t, cmd.Run(), args), Stdout: out.String(), Stderr: errOut.String()}
		}
		if r := run("create", "--name", name); r.Code != 0 {
			t.Fatalf("create: %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		} else if strings.Contains(r.Stdout+r.Stderr, real) {
			t.Fatal("create printed the real value")
		}
		url := "https://" + host + "/"
		fetch := func(when string, want int) {
			t.Helper()
			r := run("exec", name, "--", "python3", "-c", vaultFetchScript, url)
			t.Logf("%s %s: %s", e.Name, when, strings.TrimSpace(r.Stdout))
			if r.Code != 0 || !strings.Contains(r.Stdout, " 200 outside vault.test") {
				t.Fatalf("%s: the secret's host through the vault: %d\n%s\n%s", when, r.Code, r.Stdout, r.Stderr)
			}
			if got := up.keys()[host]; len(got) != want || got[want-1] != real {
				t.Fatalf("%s: the secret's host got %d requests, want %d, the last with the real value", when, len(got), want)
			}
		}
		fetch("after create", 1)
		ph := run("exec", name, "--", "printenv", "VAULT_KEY")
		if !strings.HasPrefix(strings.TrimSpace(ph.Stdout), egress.PlaceholderPrefix+"e2e-create-") {
			t.Fatalf("VAULT_KEY in the sandbox is %q, want a placeholder", ph.Stdout)
		}
		for _, id := range []string{name, egressnet.ProxyName(name)} {
			in, err := e.API.ContainerInspect(ctx, id)
			if err != nil {
				t.Fatalf("inspect %s: %v", id, err)
			}
			if strings.Contains(fmt.Sprintf("%+v %+v %+v", in.Config, in.HostConfig, in.Mounts), real) {
				t.Fatalf("inspect of %s holds the real value", id)
			}
		}

		if r := run("stop", name); r.Code != 0 {
			t.Fatalf("stop: %d\n%s", r.Code, r.Stderr)
		}
		if r := run("start", name); r.Code != 0 {
			t.Fatalf("start: %d\n%s", r.Code, r.Stderr)
		}
		proxy, err := e.API.ContainerInspect(ctx, egressnet.ProxyName(name))
		if err != nil {
			t.Fatal(err)
		}
		if !proxy.State.Running || !strings.Contains(strings.Join(proxy.Config.Cmd, " "), "--secrets") {
			t.Fatalf("the restarted proxy: running %v, command %v", proxy.State.Running, proxy.Config.Cmd)
		}
		fetch("after stop and start", 2)
	})
}
