//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/launchplan"
)

// codexFetchScript plays Codex: it reads the API key from the uploaded
// ~/.codex/auth.json and sends it as a bearer token to each URL through
// the proxy, verifying TLS with the sandbox bundle. It prints the key it
// read first, then "URL STATUS BODY" or "URL refused ERROR".
const codexFetchScript = `
import json, os, ssl, sys, urllib.request, urllib.error
key = json.load(open(os.path.expanduser("~/.codex/auth.json")))["OPENAI_API_KEY"]
print(key)
for u in sys.argv[1:]:
    ctx = None
    if u.startswith("noverify:"):
        u, ctx = u[len("noverify:"):], ssl._create_unverified_context()
    req = urllib.request.Request(u, headers={"Authorization": "Bearer " + key})
    try:
        r = urllib.request.urlopen(req, timeout=15, context=ctx)
        print(u, r.status, r.read().decode().strip())
    except urllib.error.HTTPError as e:
        print(u, "refused", e.code)
    except Exception as e:
        print(u, "refused", type(e).__name__, e)
`

// bearerRecorder is an outside HTTPS server posing as the OpenAI API; it
// records the Authorization header of every request, by host.
type bearerRecorder struct {
	mu   sync.Mutex
	seen map[string][]string
}

func (b *bearerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.seen[r.Host] = append(b.seen[r.Host], r.Header.Get("Authorization"))
	b.mu.Unlock()
	fmt.Fprintln(w, "outside "+r.Host)
}

func (b *bearerRecorder) get(host string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.seen[host]...)
}

// TestVaultCodexAPIKey plays the agent of an allowlist sandbox launched
// with creds.copy_codex and a host ~/.codex/auth.json holding an API key:
// the uploaded auth.json holds a placeholder; sent as a bearer token to
// Codex's openai_base_url host (and to api.openai.com when this machine's
// port 443 is free to pose as it) the outside server receives the real
// key; sent to another allowed host it stays the useless placeholder. The
// real key is nowhere in the sandbox (inspect, processes, files, export)
// and the host's auth.json is unchanged. Before, the real key was
// uploaded as it was.
//
// The engines take turns: each poses as api.openai.com on this machine's
// port 443, which only one of them can hold at a time.
func TestVaultCodexAPIKey(t *testing.T) {
	forEachEngineSerial(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		conn := connectEngine(t, ctx, e)
		gw := bridgeGateway(t, ctx, e)
		real := "sk-proj-codex-e2e-" + suite.runID + "-" + e.Name + "-REALKEY"

		upCA, caFile := upstreamCA(t)
		up := &bearerRecorder{seen: map[string][]string{}}
		srv := &http.Server{Handler: up, ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{
			GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) { return upCA.Leaf(h.ServerName) }}}
		defer srv.Close()
		ln, err := net.Listen("tcp4", "0.0.0.0:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = srv.ServeTLS(ln, "", "") }()
		port := ln.Addr().(*net.TCPAddr).Port
		ln443, err := net.Listen("tcp4", "0.0.0.0:443")
		if err != nil {
			t.Logf("port 443 is not free here (%v): api.openai.com is checked through network show only", err)
			ln443 = nil
		} else {
			go func() { _ = srv.ServeTLS(ln443, "", "") }()
		}

		home := t.TempDir()
		codexDir := filepath.Join(home, creds.CodexDir)
		if err := os.MkdirAll(codexDir, 0o700); err != nil {
			t.Fatal(err)
		}
		auth := `{"OPENAI_API_KEY":"` + real + `","tokens":null,"last_refresh":"2026-01-01T00:00:00Z"}`
		authPath := filepath.Join(codexDir, creds.CodexAuthFile)
		if err := os.WriteFile(authPath, []byte(auth), 0o600); err != nil {
			t.Fatal(err)
		}
		gwHost := fmt.Sprintf("codex-gw.test:%d", port)
		if err := os.WriteFile(filepath.Join(codexDir, creds.CodexConfigFile), []byte(`openai_base_url = "https://`+gwHost+`/v1"`+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}

		cfg := launchConfig()
		cfg.Network.Mode = "allowlist"
		cfg.Creds.CopyCodex, cfg.Creds.VaultCodexKey = true, true
		red := creds.NewRedactor()
		var progress bytes.Buffer
		rt := runtimeDir(t)
		name := testName(e, "vcodex")
		opts := podbot.LaunchOptions{
			Config: cfg, Intent: launchplan.IntentInteractive, Name: name, HostHome: home,
			SidecarPath: sidecarBin(t), RuntimeDir: rt, Redactor: red,
			Egress: &launchplan.Egress{Mode: egress.ModeAllowlist, UpstreamCA: caFile, Policy: egress.Policy{
				Rules: []egress.Rule{
					{Host: "api.openai.com", Ports: []int{443}, Source: "test"},
					{Host: "codex-gw.test", Ports: []int{port}, Source: "test"},
					{Host: "other.test", Ports: []int{port}, Source: "test"},
				},
				Resolve: map[string]string{"api.openai.com": gw, "codex-gw.test": gw, "other.test": gw},
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
		t.Cleanup(func() {
			cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer ccancel()
			if err := sb.Close(cctx, true); err != nil {
				t.Errorf("close sandbox %s: %v", sb.Name, err)
			}
		})
		if red.Redact("x "+real+" y") == "x "+real+" y" {
			t.Error("the launch did not give the real key to the redactor")
		}

		urls := []string{fmt.Sprintf("https://%s/v1/models", gwHost), fmt.Sprintf("noverify:https://other.test:%d/v1/models", port)}
		if ln443 != nil {
			urls = append(urls, "https://api.openai.com/v1/models")
		}
		out := mustExecIn(t, ctx, conn, sb, append([]string{"python3", "-c", codexFetchScript}, urls...)...)
		t.Logf("%s through the proxy:\n%s", e.Name, out)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 1+len(urls) {
			t.Fatalf("unexpected output:\n%s", out)
		}
		placeholder := lines[0]
		if !strings.HasPrefix(placeholder, egress.PlaceholderPrefix+podbot.CodexSecretName+"-") {
			t.Fatalf("the uploaded auth.json holds %q, want a placeholder", placeholder)
		}
		if !strings.Contains(lines[1], " 200 outside "+gwHost) || !strings.Contains(lines[2], " 200 outside other.test") {
			t.Fatalf("want 200 from the base URL host and other.test:\n%s", out)
		}
		if got := up.get(gwHost); len(got) != 1 || got[0] != "Bearer "+real {
			t.Fatalf("the base URL host did not receive the real key once: %d requests", len(got))
		}
		if got := up.get(fmt.Sprintf("other.test:%d", port)); len(got) != 1 || got[0] != "Bearer "+placeholder {
			t.Fatalf("other.test: want one request with the useless placeholder, got %d", len(got))
		}
		if ln443 != nil {
			if !strings.Contains(lines[3], " 200 outside api.openai.com") {
				t.Fatalf("api.openai.com: want 200:\n%s", out)
			}
			if got := up.get("api.openai.com"); len(got) != 1 || got[0] != "Bearer "+real {
				t.Fatalf("api.openai.com did not receive the real key once: %d requests", len(got))
			}
		}

		show := runPodbot(t, ctx, e, "network", "show", name)
		if show.Code != 0 || !strings.Contains(show.Stdout, podbot.CodexSecretName) || !strings.Contains(show.Stdout, "api.openai.com") ||
			!strings.Contains(show.Stdout, gwHost) || strings.Contains(show.Stdout, placeholder) || strings.Contains(show.Stdout, real) {
			t.Fatalf("network show: %d\n%s\n%s", show.Code, show.Stdout, show.Stderr)
		}
		if strings.Contains(progress.String(), real) {
			t.Fatal("a progress line holds the real key")
		}
		if b, _ := os.ReadFile(authPath); string(b) != auth {
			t.Fatal("the host's auth.json changed")
		}

		for _, id := range []string{sb.ID, egressnet.ProxyName(name)} {
			in, err := conn.Inspect(ctx, id, false)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := json.Marshal(in)
			if bytes.Contains(body, []byte(real)) {
				t.Fatalf("inspect of %s holds the real key", id)
			}
		}
		requireNotInSandbox(t, ctx, conn, sb.ID, real, "the real key")
	})
}
