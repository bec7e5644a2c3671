//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/pool"
)

// poolEnv is one test's private podbot environment for pools: its own
// state directory (pool definitions), cache (tools workspaces) and config.
type poolEnv struct {
	e     engineUnderTest
	name  string // the pool's name, unique to this run
	env   []string
	state string
	cache string
}

func newPoolEnv(t *testing.T, e engineUnderTest, purpose string) *poolEnv {
	t.Helper()
	var b [3]byte
	rand.Read(b[:])
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p := &poolEnv{e: e, name: purpose + "-" + hex.EncodeToString(b[:]), state: filepath.Join(dir, "state"), cache: filepath.Join(dir, "cache")}
	p.env = append(os.Environ(), "PODBOT_CONFIG_PATH="+cfg, "XDG_STATE_HOME="+p.state, "XDG_CACHE_HOME="+p.cache,
		"PODBOT_TOOLS_IMAGE="+toolsImage, "PODBOT_IMAGE="+toolsImage, "PODBOT_SIDECAR_PATH="+filepath.Join(suite.bin, "podbot-sidecar"),
		"PODBOT_POOL_REFILL_INTERVAL=300ms")
	t.Cleanup(func() { p.removeAll(t) })
	return p
}

// cmd is the podbot command for args in this environment.
func (p *poolEnv) cmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(suite.bin, "podbot"), append([]string{"--engine-socket", p.e.Endpoint}, args...)...)
	cmd.Env = p.env
	return cmd
}

// run runs podbot with args and returns what it did.
func (p *poolEnv) run(t testing.TB, ctx context.Context, args ...string) result {
	t.Helper()
	cmd := p.cmd(ctx, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("podbot %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return result{Code: code, Stdout: out.String(), Stderr: errOut.String()}
}

// mustRun is run that fails the test on a non-zero exit.
func (p *poolEnv) mustRun(t testing.TB, ctx context.Context, args ...string) result {
	t.Helper()
	res := p.run(t, ctx, args...)
	if res.Code != 0 {
		t.Fatalf("podbot %v: exit %d\n%s\n%s", args, res.Code, res.Stdout, res.Stderr)
	}
	return res
}

// poolLsRow is one row of podbot pool ls --json.
type poolLsRow struct {
	Name      string `json:"name"`
	Size      int    `json:"size"`
	Ready     int    `json:"ready"`
	Starting  int    `json:"starting"`
	Claimed   int    `json:"claimed"`
	Failing   int    `json:"failing"`
	LastError string `json:"last_error"`
}

// ls returns this pool's row of podbot pool ls --json.
func (p *poolEnv) ls(t testing.TB, ctx context.Context) poolLsRow {
	t.Helper()
	var rows []poolLsRow
	decodeJSON(t.(*testing.T), p.mustRun(t, ctx, "pool", "ls", "--json").Stdout, &rows)
	for _, r := range rows {
		if r.Name == p.name {
			return r
		}
	}
	t.Fatalf("pool %s not listed", p.name)
	return poolLsRow{}
}

// waitReady polls until the pool has n ready members and returns how long
// that took.
func (p *poolEnv) waitReady(t *testing.T, ctx context.Context, n int, limit time.Duration) time.Duration {
	t.Helper()
	t0 := time.Now()
	for {
		if r := p.ls(t, ctx); r.Ready == n {
			return time.Since(t0)
		}
		if time.Since(t0) > limit {
			t.Fatalf("pool %s not back to %d ready within %s: %+v", p.name, n, limit, p.ls(t, ctx))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// serve starts podbot pool serve; the returned func stops it (SIGTERM).
func (p *poolEnv) serve(t *testing.T, ctx context.Context) (*exec.Cmd, func()) {
	t.Helper()
	cmd := p.cmd(ctx, "pool", "serve")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if testing.Verbose() {
			t.Logf("pool serve log:\n%s", lastLines(errOut.String(), 15))
		}
	}
	t.Cleanup(stop)
	return cmd, stop
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// containers lists every container carrying this pool's label.
func (p *poolEnv) containers(t testing.TB, ctx context.Context) []container.Summary {
	t.Helper()
	rows, err := p.e.API.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", "podbot.pool="+p.name))})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// removeAll force-removes every container of this pool (members and
// claimed sandboxes).
func (p *poolEnv) removeAll(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range p.containers(t, ctx) {
		if err := p.e.API.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !strings.Contains(err.Error(), "No such container") && !strings.Contains(strings.ToLower(err.Error()), "no such") {
			t.Logf("cleanup %s: %v", c.Names, err)
		}
		// An allowlist member's proxy, network and directory, named after it.
		if n := c.Labels["podbot.egress.name"]; strings.HasPrefix(n, "podbot-pool-"+p.name+"-") {
			_ = p.e.API.ContainerRemove(ctx, "podbot-egress-"+n, container.RemoveOptions{Force: true})
			_ = p.e.API.NetworkRemove(ctx, "podbot-net-"+n)
			if dir := c.Labels["podbot.egress.dir"]; filepath.Base(dir) == n && filepath.Base(filepath.Dir(dir)) == "egress" {
				_ = os.RemoveAll(dir)
			}
		}
	}
}

// removeEgressOf removes what podbot prune would for sandbox name once it
// is gone: its egress proxy, internal network and egress directory dir
// ("" skips it; one that is not .../egress/<name> fails the test). Missing
// pieces are fine.
func removeEgressOf(t *testing.T, ctx context.Context, e engineUnderTest, name, dir string) {
	t.Helper()
	conn := poolConn(t, ctx, e)
	if err := conn.Remove(ctx, egressnet.ProxyName(name), true); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("remove the proxy of %s: %v", name, err)
	}
	if err := conn.RemoveNetwork(ctx, egressnet.NetworkName(name)); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("remove the network of %s: %v", name, err)
	}
	if dir == "" {
		return
	}
	if filepath.Base(dir) != name || filepath.Base(filepath.Dir(dir)) != "egress" {
		t.Fatalf("the egress directory of %s is %q, not .../egress/%s", name, dir, name)
	}
	if err := (egressnet.Dirs{Root: dir}).Remove(); err != nil {
		t.Errorf("remove the egress directory of %s: %v", name, err)
	}
}

// leftOnEngine lists the containers and networks on p's engine whose name
// holds the pool's name (its members, their proxies and networks) or is
// one of names (sandboxes claimed from it).
func (p *poolEnv) leftOnEngine(t testing.TB, ctx context.Context, names ...string) []string {
	t.Helper()
	ours := func(n string) bool {
		n = strings.TrimPrefix(n, "/")
		if strings.Contains(n, p.name) {
			return true
		}
		for _, s := range names {
			if n == s || n == egressnet.ProxyName(s) || n == egressnet.NetworkName(s) {
				return true
			}
		}
		return false
	}
	var left []string
	cs, err := p.e.API.ContainerList(ctx, container.ListOptions{All: true})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	for _, c := range cs {
		for _, n := range c.Names {
			if ours(n) {
				left = append(left, "container "+strings.TrimPrefix(n, "/")+" ("+c.State+")")
			}
		}
	}
	nets, err := p.e.API.NetworkList(ctx, network.ListOptions{})
	if err != nil {
		t.Fatalf("list networks: %v", err)
	}
	for _, n := range nets {
		if ours(n.Name) {
			left = append(left, "network "+n.Name)
		}
	}
	return left
}

// poolConn connects the library to engine e.
func poolConn(t testing.TB, ctx context.Context, e engineUnderTest) *engine.Conn {
	t.Helper()
	ep, err := engine.ParseEndpoint(e.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := engine.Connect(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// libraryPool fills a tools pool of size through the library and returns
// its backend, spec and the workspace root members live under.
func libraryPool(t testing.TB, ctx context.Context, e engineUnderTest, conn *engine.Conn, name string, size int, mutate func(*config.Config)) (*podbot.PoolBackend, pool.Spec, config.Config, string) {
	t.Helper()
	cfg := config.Default()
	cfg.Tools.Image = toolsImage
	if mutate != nil {
		mutate(&cfg)
	}
	root := t.TempDir()
	b := podbot.NewPoolBackend(conn, podbot.PoolOptions{Config: cfg, SidecarPath: filepath.Join(suite.bin, "podbot-sidecar"), WorkspaceRoot: root})
	spec := pool.Spec{Name: name, Kind: pool.KindTools, Size: size}
	st, err := pool.OpenStore(filepath.Join(t.TempDir(), "pools"))
	if err != nil {
		t.Fatal(err)
	}
	r := &pool.Refiller{Backend: b, Store: st}
	if _, err := r.Reconcile(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ms, _ := b.Members(cctx, name)
		for _, m := range ms {
			if m.State != pool.StateClaimed {
				b.Remove(cctx, m)
			}
		}
	})
	return b, spec, cfg, root
}

// claimLine is the pool claim report podbot logs on stderr.
type claimLine struct {
	Outcome, Member, Name string
}

// parseClaim finds the "pool claim" log line in stderr.
func parseClaim(stderr string) (claimLine, bool) {
	for _, l := range strings.Split(stderr, "\n") {
		if !strings.Contains(l, `msg="pool claim"`) {
			continue
		}
		var c claimLine
		for _, f := range strings.Fields(l) {
			k, v, _ := strings.Cut(f, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "outcome":
				c.Outcome = v
			case "member":
				c.Member = v
			case "name":
				c.Name = v
			}
		}
		return c, true
	}
	return claimLine{}, false
}

// jsonOf is v as indented JSON, for failure messages.
func jsonOf(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
