//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/launchplan"
)

// vaultFetchScript sends the placeholder in $VAULT_KEY as x-api-key to
// each URL, through the proxy the environment names, verifying TLS with
// the default context (OpenSSL reads SSL_CERT_FILE: the sandbox bundle).
// A URL prefixed "noverify:" is fetched without verifying the server (a
// host the vault does not intercept, whose test CA the sandbox does not
// trust). It prints "URL STATUS BODY" or "URL refused ERROR".
const vaultFetchScript = `
import os, ssl, sys, urllib.request, urllib.error
for u in sys.argv[1:]:
    ctx = None
    if u.startswith("noverify:"):
        u, ctx = u[len("noverify:"):], ssl._create_unverified_context()
    req = urllib.request.Request(u, headers={"x-api-key": os.environ["VAULT_KEY"]})
    try:
        r = urllib.request.urlopen(req, timeout=15, context=ctx)
        print(u, r.status, r.read().decode().strip())
    except urllib.error.HTTPError as e:
        print(u, "refused", e.code, e.read().decode(errors="replace").strip()[:200])
    except Exception as e:
        print(u, "refused", type(e).__name__, e)
`

// vaultSearchScript runs as root in the sandbox and looks for the value
// (hex in argv, so no cmdline holds it) in every process's environ and
// cmdline and in every file outside /proc, /sys and /dev (mounts and
// tmpfs included; the export covers the image's layers). It prints one
// line per hit and "searched N" at the end.
const vaultSearchScript = `
import os, sys
needle = bytes.fromhex(sys.argv[1])
hits = 0
for pid in os.listdir("/proc"):
    if not pid.isdigit() or pid == str(os.getpid()):
        continue
    for f in ("environ", "cmdline"):
        try:
            with open("/proc/%s/%s" % (pid, f), "rb") as fh:
                if needle in fh.read():
                    print("HIT /proc/%s/%s" % (pid, f)); hits += 1
        except Exception:
            pass
n = 0
for top in os.listdir("/"):
    if top in ("proc", "sys", "dev"):
        continue
    for root, dirs, files in os.walk("/" + top):
        for name in files:
            p = os.path.join(root, name)
            try:
                if not os.path.isfile(p) or os.path.islink(p) or os.path.getsize(p) > 256 << 20:
                    continue
                with open(p, "rb") as fh:
                    n += 1
                    if needle in fh.read():
                        print("HIT", p); hits += 1
            except Exception:
                pass
print("searched", n)
`

// upstreamTLS is an outside HTTPS server with a test CA of its own (given
// to the proxy through network.upstream_ca) that records the x-api-key
// header of every request, by host.
type upstreamTLS struct {
	mu   sync.Mutex
	seen map[string][]string
}

func (u *upstreamTLS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.seen[r.Host] = append(u.seen[r.Host], r.Header.Get("X-Api-Key"))
	u.mu.Unlock()
	fmt.Fprintln(w, "outside "+r.Host)
}

func (u *upstreamTLS) keys() map[string][]string {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := map[string][]string{}
	for k, v := range u.seen {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// TestVaultSecretSwappedOnlyForItsHost plays the agent of a vault sandbox:
// its VAULT_KEY holds a placeholder; sent to the secret's host (HTTPS,
// intercepted by the proxy with the sandbox CA the sandbox trusts) the
// outside server receives the real value; sent to another allowed host
// over plain HTTP it is refused (403) and logged, and over HTTPS to that
// host it arrives as the useless placeholder. The real value is nowhere in
// the sandbox: not in inspect (env, labels, mounts), not in any process's
// environ or cmdline, not in its files (export, and a search as root), and
// podbot network show names the secret without value or placeholder.
// Before the vault was applied, Launch refused this configuration.
func TestVaultSecretSwappedOnlyForItsHost(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) { vaultSwap(t, e, false) })
}

// TestVaultReadOnlyRootfs runs the same agent in a sandbox with
// sandbox.read_only_rootfs = true: the vault works (the placeholder sent
// to the secret's host arrives as the real value), the sandbox CA comes
// from a host directory mounted read-only at /etc/podbot, which neither
// the agent nor root inside can write to, and the root filesystem is still
// read-only. Before, Launch refused the vault on a read-only root.
func TestVaultReadOnlyRootfs(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) { vaultSwap(t, e, true) })
}

// vaultSwap is TestVaultSecretSwappedOnlyForItsHost on engine e, with
// sandbox.read_only_rootfs = readOnly.
func vaultSwap(t *testing.T, e engineUnderTest, readOnly bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn := connectEngine(t, ctx, e)
	gw := bridgeGateway(t, ctx, e)
	real := "sk-vault-e2e-" + suite.runID + "-" + e.Name + "-REALVALUE"

	upCA, caFile := upstreamCA(t)
	up := &upstreamTLS{seen: map[string][]string{}}
	tlsLn, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	tlsSrv := &http.Server{Handler: up, ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{
		GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) { return upCA.Leaf(h.ServerName) }}}
	go func() { _ = tlsSrv.ServeTLS(tlsLn, "", "") }()
	defer tlsSrv.Close()
	plainLn, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	plainSrv := &http.Server{Handler: up, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = plainSrv.Serve(plainLn) }()
	defer plainSrv.Close()
	tlsPort := tlsLn.Addr().(*net.TCPAddr).Port
	plainPort := plainLn.Addr().(*net.TCPAddr).Port

	cfg := launchConfig()
	cfg.Network.Mode = "allowlist"
	cfg.Sandbox.ReadOnlyRootfs = readOnly
	cfg.Secrets = []config.Secret{{Name: "e2e-api", Source: "env:PODBOT_E2E_VAULT_KEY",
		Hosts: []string{fmt.Sprintf("vault.test:%d", tlsPort)}, Header: "x-api-key: {}", Env: "VAULT_KEY"}}
	red := creds.NewRedactor()
	var progress bytes.Buffer
	rt := runtimeDir(t)
	name := testName(e, "vault")
	if readOnly {
		name = testName(e, "vaultro")
	}
	opts := podbot.LaunchOptions{
		Config: cfg, Intent: launchplan.IntentInteractive, Name: name,
		SidecarPath: sidecarBin(t), RuntimeDir: rt, Redactor: red,
		Environ: []string{"PODBOT_E2E_VAULT_KEY=" + real},
		Egress: &launchplan.Egress{Mode: egress.ModeAllowlist, UpstreamCA: caFile, Policy: egress.Policy{
			Rules: []egress.Rule{
				{Host: "vault.test", Ports: []int{tlsPort}, Source: "test"},
				{Host: "other.test", Ports: []int{tlsPort, plainPort}, Source: "test"},
			},
			Resolve: map[string]string{"vault.test": gw, "other.test": gw},
		}},
	}
	opts.Progress = func(step, detail string) {
		fmt.Fprintf(&progress, "%s: %s\n", step, detail)
		t.Logf("launch %s: %s", step, detail)
	}
	sb, err := podbot.Launch(ctx, conn, opts)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	trustDir := ""
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		if err := sb.Close(cctx, true); err != nil {
			t.Errorf("close sandbox %s: %v", sb.Name, err)
		}
		if _, err := os.Stat(trustDir); trustDir != "" && !os.IsNotExist(err) {
			t.Errorf("the trust directory %s outlived the sandbox: %v", trustDir, err)
		}
	})
	if red.Redact("x "+real+" y") == "x "+real+" y" {
		t.Error("the launch did not give the real value to the redactor")
	}

	vaultURL := fmt.Sprintf("https://vault.test:%d/", tlsPort)
	otherTLS := fmt.Sprintf("https://other.test:%d/", tlsPort)
	otherPlain := fmt.Sprintf("http://other.test:%d/", plainPort)
	out := mustExecIn(t, ctx, conn, sb, "python3", "-c", vaultFetchScript, vaultURL, otherPlain, "noverify:"+otherTLS)
	t.Logf("%s through the proxy:\n%s", e.Name, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], " 200 outside vault.test") {
		t.Fatalf("the secret's host over HTTPS through the vault: want 200, got:\n%s", out)
	}
	if !strings.Contains(lines[1], " refused 403") || !strings.Contains(lines[2], " 200 outside other.test") {
		t.Fatalf("the placeholder to another host: want 403 over HTTP, passed through untouched over HTTPS; got:\n%s", out)
	}
	placeholder := strings.TrimSpace(mustExecIn(t, ctx, conn, sb, "printenv", "VAULT_KEY"))
	if !strings.HasPrefix(placeholder, egress.PlaceholderPrefix+"e2e-api-") {
		t.Fatalf("VAULT_KEY in the sandbox is %q, want a placeholder", placeholder)
	}
	seen := up.keys()
	vaultHost := fmt.Sprintf("vault.test:%d", tlsPort)
	if len(seen[vaultHost]) != 1 || seen[vaultHost][0] != real {
		t.Fatalf("the secret's host did not receive the real value once: %d requests", len(seen[vaultHost]))
	}
	for host, vs := range seen {
		for _, v := range vs {
			if host != vaultHost && v == real {
				t.Fatalf("%s received the real value", host)
			}
		}
	}
	if vs := seen[fmt.Sprintf("other.test:%d", plainPort)]; len(vs) != 0 {
		t.Fatalf("the refused plain request reached the outside server")
	}
	if vs := seen[fmt.Sprintf("other.test:%d", tlsPort)]; len(vs) != 1 || vs[0] != placeholder {
		t.Fatalf("other.test over HTTPS got %d requests, want one with the useless placeholder", len(vs))
	}

	// The refusal is in the decision log, naming the secret.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := runPodbot(t, ctx, e, "network", "log", "--json", name)
		if r.Code == 0 && strings.Contains(r.Stdout, `"host":"other.test"`) && strings.Contains(r.Stdout, "placeholder of secret e2e-api") {
			if strings.Contains(r.Stdout, real) {
				t.Fatal("the decision log holds the real value")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the decision log lacks the placeholder refusal: %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// network show names the secret and its hosts, nothing more.
	show := runPodbot(t, ctx, e, "network", "show", name)
	if show.Code != 0 || !strings.Contains(show.Stdout, "e2e-api") || !strings.Contains(show.Stdout, vaultHost) ||
		strings.Contains(show.Stdout, placeholder) || strings.Contains(show.Stdout, real) {
		t.Fatalf("network show: %d\n%s\n%s", show.Code, show.Stdout, show.Stderr)
	}
	if strings.Contains(progress.String(), real) {
		t.Fatal("a progress line holds the real value")
	}

	// inspect: env, labels, mounts, everything the engine reports.
	for _, id := range []string{sb.ID, egressnet.ProxyName(name)} {
		in, err := conn.Inspect(ctx, id, false)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(in)
		if bytes.Contains(body, []byte(real)) {
			t.Fatalf("inspect of %s holds the real value", id)
		}
		if id == sb.ID {
			// Of the egress directory the sandbox mounts the trust
			// directory alone, read-only at /etc/podbot.
			trust := 0
			for _, m := range in.Mounts {
				if strings.HasPrefix(m.Source, rt) {
					if filepath.Base(m.Source) != "trust" || m.Destination != podbot.VaultTrustDir || m.RW {
						t.Fatalf("the sandbox mounts %s from the egress directory at %s (rw %v)", m.Source, m.Destination, m.RW)
					}
					trust++
					trustDir = m.Source
				}
			}
			if trust != 1 {
				t.Fatalf("the sandbox mounts the trust directory %d times", trust)
			}
			if in.HostConfig == nil || in.HostConfig.ReadonlyRootfs != readOnly {
				t.Fatalf("the sandbox's root filesystem: read-only %v, want %v", in.HostConfig != nil && in.HostConfig.ReadonlyRootfs, readOnly)
			}
		}
	}

	// Processes, files and the exported filesystem.
	requireNotInSandbox(t, ctx, conn, sb.ID, real, "the real value")
	// The CA is trusted, its key is absent.
	files := mustExecIn(t, ctx, conn, sb, "sh", "-c", "grep -c 'BEGIN CERTIFICATE' /etc/podbot/ca-bundle.pem; grep -l 'PRIVATE KEY' -r /etc/podbot || true")
	if strings.Contains(files, "/etc/podbot") {
		t.Fatalf("a private key is in the sandbox's /etc/podbot:\n%s", files)
	}
	// The agent, and root inside, cannot change what the sandbox trusts.
	for _, user := range []string{sb.Plan.User, "0"} {
		var wout, werr bytes.Buffer
		code, err := conn.Exec(ctx, sb.ID, engine.ExecOptions{User: user, Stdout: &wout, Stderr: &werr, Cmd: []string{"sh", "-c",
			"for f in /etc/podbot/ca-bundle.pem /etc/podbot/egress-ca.pem /etc/podbot/new.pem; do " +
				"if (echo evil >> $f) 2>/dev/null; then echo WROTE $f; fi; done; " +
				"mv /etc/podbot/ca-bundle.pem /etc/podbot/x 2>/dev/null && echo MOVED; " +
				"rm -f /etc/podbot/egress-ca.pem 2>/dev/null; test -e /etc/podbot/egress-ca.pem || echo REMOVED; " +
				"chmod 666 /etc/podbot/ca-bundle.pem 2>/dev/null && echo CHMOD; true"}})
		if err != nil || code != 0 || wout.Len() != 0 {
			t.Fatalf("user %q changed /etc/podbot: %d %v\n%s%s", user, code, err, wout.String(), werr.String())
		}
	}
	if readOnly {
		r := execIn(t, ctx, conn, sb, "sh", "-c", "echo x > /etc/podbot-rootfs-probe")
		if r.code == 0 {
			t.Fatal("the root filesystem is writable")
		}
	}
}

// streamContains reports whether needle occurs in r, reading it once.
func streamContains(r io.Reader, needle []byte) (bool, int64, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	buf := make([]byte, 1<<20)
	var carry []byte
	var n int64
	for {
		k, err := br.Read(buf)
		if k > 0 {
			n += int64(k)
			window := append(carry, buf[:k]...)
			if bytes.Contains(window, needle) {
				return true, n, nil
			}
			keep := len(needle) - 1
			if len(window) < keep {
				keep = len(window)
			}
			carry = append([]byte(nil), window[len(window)-keep:]...)
		}
		if err == io.EOF {
			return false, n, nil
		}
		if err != nil {
			return false, n, err
		}
	}
}

// upstreamCA makes a CA for the tests' outside TLS servers and writes its
// certificate to a file, to give the proxy as network.upstream_ca.
func upstreamCA(t *testing.T) (*egress.CA, string) {
	t.Helper()
	ca, err := egress.NewCA("podbot e2e upstream")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "upstream-ca.pem")
	if err := os.WriteFile(file, ca.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	return ca, file
}

// requireNotInSandbox fails t when value is in any process's environ or
// cmdline or in any file of sandbox id (searched as root inside, with the
// value passed in hex so the search itself does not hold it), or anywhere in
// its exported filesystem. what names the value in failures.
func requireNotInSandbox(t *testing.T, ctx context.Context, conn *engine.Conn, id, value, what string) {
	t.Helper()
	var sout, serr bytes.Buffer
	code, err := conn.Exec(ctx, id, engine.ExecOptions{User: "0",
		Cmd: []string{"python3", "-c", vaultSearchScript, hex.EncodeToString([]byte(value))}, Stdout: &sout, Stderr: &serr})
	if err != nil || code != 0 {
		t.Fatalf("search: %d %v %s", code, err, serr.String())
	}
	if strings.Contains(sout.String(), "HIT") || !strings.Contains(sout.String(), "searched") {
		t.Fatalf("%s is in the sandbox:\n%s", what, sout.String())
	}
	t.Logf("in-sandbox search: %s", lastLine(sout.String()))
	rc, err := conn.API().ContainerExport(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	found, n, err := streamContains(rc, []byte(value))
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if found {
		t.Fatalf("the exported filesystem holds %s", what)
	}
	t.Logf("export searched: %d bytes", n)
}
