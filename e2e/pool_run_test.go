//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/pool"
)

// poolStubAgent is a custom agent run as /bin/sh -c: it prints what a
// claim applied (working directory, the copied credentials, the clone, the
// git identity, the allowlisted variable, the terminal), then a marker,
// and exits with status 7.
const poolStubAgent = `echo "stub-cwd=$(pwd)"
echo "stub-cred=$(cat "$HOME/.claude/settings.json" 2>&1)"
echo "stub-head=$(git log -1 --format=%s 2>&1)"
echo "stub-user=$(git config user.name 2>&1)"
echo "stub-env=$STUB_ALLOWED"
if test -t 0; then echo stub-tty=yes; else echo stub-tty=no; fi
echo podbot-stub-agent-ready
exit 7`

// startAnonGitServer serves the bare repositories under root over git's
// smart HTTP protocol without authentication (a claimed sandbox clones
// without a GitHub App token), on all host addresses; it returns the clone
// base as a container on e's bridge sees it.
func startAnonGitServer(t *testing.T, ctx context.Context, e engineUnderTest, root string) string {
	t.Helper()
	if _, err := os.Stat(gitHTTPBackend); err != nil {
		t.Fatalf("git http-backend missing (%v): install the git package", err)
	}
	gw := bridgeGateway(t, ctx, e)
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &cgi.Handler{Path: gitHTTPBackend, Root: "/", Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + net.JoinHostPort(gw, strconv.Itoa(l.Addr().(*net.TCPAddr).Port)) + "/"
}

// addExecutable commits the host file src as an executable name on branch.
func (r *hostRepo) addExecutable(t *testing.T, branch, src, name string) {
	t.Helper()
	copyFile(t, src, filepath.Join(r.work, name))
	if err := os.Chmod(filepath.Join(r.work, name), 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, r.work, "add", name)
	git(t, r.work, "commit", "--quiet", "-m", "add "+name)
	git(t, r.work, "push", "--quiet", "origin", branch)
}

// poolRunEnv is a pool environment whose configuration runs an agent:
// podbot pool create and podbot run/host read the same file.
type poolRunEnv struct {
	*poolEnv
	cfgPath string
	home    string // the claimer's HOME: ~/.claude and ~/.gitconfig
	marker  string // the content of ~/.claude/settings.json
}

func newPoolRunEnv(t *testing.T, e engineUnderTest, purpose, cfg string) *poolRunEnv {
	t.Helper()
	p := newPoolEnv(t, e, purpose)
	r := &poolRunEnv{poolEnv: p, home: t.TempDir(), marker: "claude-settings-" + suite.runID}
	for _, kv := range p.env {
		if v, ok := strings.CutPrefix(kv, "PODBOT_CONFIG_PATH="); ok {
			r.cfgPath = v
		}
	}
	if err := os.WriteFile(r.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(r.home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.home, ".claude", "settings.json"), []byte(r.marker), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.home, ".gitconfig"), []byte("[user]\n\tname = Pool Tester\n\temail = pool@podbot.invalid\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runtime := t.TempDir()
	if err := os.Chmod(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	p.env = append(p.env, "HOME="+r.home, "XDG_RUNTIME_DIR="+runtime, "GIT_CONFIG_NOSYSTEM=1")
	return r
}

// claimedRe matches the progress line of a claim that took a member.
var claimedRe = regexp.MustCompile(`podbot: pool: claimed warm member (podbot-pool-[a-z0-9-]+) of pool ([a-z0-9-]+) in ([0-9.]+) ms; it is now (\S+)`)

// waitForOutput polls out until it holds marker and returns how long after t0
// that was (0 when it never did within limit).
func waitForOutput(out func() string, marker string, t0 time.Time, limit time.Duration) time.Duration {
	for time.Since(t0) < limit {
		if strings.Contains(out(), marker) {
			return time.Since(t0)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return 0
}

// TestPoolRunStubAgent: podbot run --pool claims the one member of an
// agent pool, reports it on stderr, and the stub agent, on a real
// pseudo-terminal, sees everything a cold launch applies: the clone as its
// working directory, the copied ~/.claude, the host's git identity, its
// allowlisted variable. A second run finds the pool empty, says so and
// launches cold with the same result. The time from starting podbot to the
// agent's first output is logged for both.
func TestPoolRunStubAgent(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		repos := t.TempDir()
		newHostRepo(t, repos, "acme/sample", "feature")
		base := startAnonGitServer(t, ctx, e, repos)
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		cfg := fmt.Sprintf(`[agent]
kind = "custom"
command = "/bin/sh"
args = ["-c", %s]
env_allowlist = ["STUB_ALLOWED"]
[creds]
copy_claude = true
copy_codex = false
[network]
mode = "open"
[github]
clone_base_url = %q
`, q(poolStubAgent), base)
		p := newPoolRunEnv(t, e, "run", cfg)
		allowed := "allowed-" + suite.runID
		p.env = append(p.env, "STUB_ALLOWED="+allowed)
		p.mustRun(t, ctx, "pool", "create", p.name, "--size", "1", "--kind", "agent", "--network", "open")

		run := func(t *testing.T, name string) (string, time.Duration) {
			removeOnCleanup(t, e, name)
			cmd := p.cmd(ctx, "run", "--pool", p.name, "--name", name, "--rm", "--repo", "acme/sample", "--branch", "feature")
			t0 := time.Now()
			pr := startOnPTY(t, cmd, 24, 80)
			first := waitForOutput(pr.out.String, "stub-cwd=", t0, 2*time.Minute)
			code := pr.wait(t, 2*time.Minute)
			out := pr.out.String()
			if code != 7 {
				t.Fatalf("podbot run --pool: exit %d, want the agent's 7\n%s", code, out)
			}
			for _, want := range []string{"stub-cwd=/work/sample", "stub-cred=" + p.marker, "stub-head=change feature.txt",
				"stub-user=Pool Tester", "stub-env=" + allowed, "stub-tty=yes", "podbot-stub-agent-ready", "container " + name + " removed"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if rows := containersNamed(t, ctx, e, name); len(rows) != 0 {
				t.Errorf("--rm left %s (%s)", name, rows[0].State)
			}
			return out, first
		}

		warmName := testName(e, "poolrun-warm")
		out, warm := run(t, warmName)
		m := claimedRe.FindStringSubmatch(out)
		if m == nil || m[2] != p.name || m[4] != warmName || !strings.HasPrefix(m[1], podbot.MemberPrefix+p.name+"-") {
			t.Fatalf("the first run did not report a warm claim of pool %s:\n%s", p.name, out)
		}
		if strings.Contains(out, "podbot: create:") {
			t.Errorf("a warm claim created a container:\n%s", out)
		}

		coldName := testName(e, "poolrun-cold")
		out, cold := run(t, coldName)
		if !strings.Contains(out, "podbot: pool: pool "+p.name+" has no ready member: launching cold from the pool's template") ||
			!strings.Contains(out, "podbot: create: "+coldName) || claimedRe.MatchString(out) {
			t.Fatalf("the second run did not say it launched cold:\n%s", out)
		}
		if r := p.ls(t, ctx); r.Ready != 0 || r.Claimed != 0 {
			t.Errorf("pool after two --rm runs: %+v; want nothing ready or claimed", r)
		}
		load, _ := os.ReadFile("/proc/loadavg")
		t.Logf("%s: podbot run to the agent's first output, with clone and credentials: warm %s (claim %s ms), cold %s; cold/warm %.1f; load %s",
			e.Name, warm.Round(time.Millisecond), m[3], cold.Round(time.Millisecond), float64(cold)/float64(warm), strings.TrimSpace(string(load)))

	})
}

// TestPoolRunFirstOutput measures, on a pool of network none, the time
// from starting podbot run --pool to the stub agent's first output, warm
// and then cold, with no workspace (the credentials upload and git
// identity still run): the claim against the create and start.
func TestPoolRunFirstOutput(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		p := newPoolRunEnv(t, e, "first", fmt.Sprintf(`[agent]
kind = "custom"
command = "/bin/sh"
args = ["-c", %s]
[creds]
copy_claude = true
copy_codex = false
[network]
mode = "none"
`, q(poolStubAgent)))
		p.mustRun(t, ctx, "pool", "create", p.name, "--size", "1", "--kind", "agent", "--network", "none")
		run := func(name string) (string, time.Duration) {
			removeOnCleanup(t, e, name)
			cmd := p.cmd(ctx, "run", "--pool", p.name, "--name", name, "--rm")
			t0 := time.Now()
			pr := startOnPTY(t, cmd, 24, 80)
			first := waitForOutput(pr.out.String, "stub-cwd=", t0, 2*time.Minute)
			out := pr.out.String()
			if code := pr.wait(t, 2*time.Minute); code != 7 || !strings.Contains(pr.out.String(), "stub-cred="+p.marker) {
				t.Fatalf("podbot run --pool without a workspace: exit %d\n%s", code, pr.out.String())
			}
			return out, first
		}
		out, warm := run(testName(e, "poolfirst-warm"))
		m := claimedRe.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no warm claim:\n%s", out)
		}
		out, cold := run(testName(e, "poolfirst-cold"))
		if !strings.Contains(out, "launching cold") {
			t.Fatalf("the emptied pool did not launch cold:\n%s", out)
		}
		load, _ := os.ReadFile("/proc/loadavg")
		t.Logf("%s: podbot run to the agent's first output, no workspace: warm %s (claim %s ms), cold %s; cold/warm %.1f; load %s",
			e.Name, warm.Round(time.Millisecond), m[3], cold.Round(time.Millisecond), float64(cold)/float64(warm), strings.TrimSpace(string(load)))
	})
}

// TestPoolRunRefusals: what a member made ahead cannot take is refused
// before anything is claimed, naming the option and the fix; a member made
// from other settings than the claimer's is refused and stays in the pool.
func TestPoolRunRefusals(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		root, ws := stubWorkspace(t)
		cfg := fmt.Sprintf(`[agent]
kind = "custom"
command = "/bin/true"
[creds]
copy_claude = false
copy_codex = false
[network]
mode = "none"
[workspace]
allowed_roots = [%q]
`, root)
		p := newPoolRunEnv(t, e, "refuse", cfg)
		p.mustRun(t, ctx, "pool", "create", p.name, "--size", "1", "--kind", "agent", "--network", "none")
		other := filepath.Join(t.TempDir(), "other.toml")
		if err := os.WriteFile(other, []byte(cfg+"[sandbox]\npids_limit = 999\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			args []string
			env  []string
			want []string
		}{
			{"host mount", []string{"run", "--pool", p.name, "--workspace", ws}, nil, []string{"--workspace", "bind mount", "without --pool"}},
			{"local clone", []string{"run", "--pool", p.name, "--repo", ws}, nil, []string{"--repo PATH", "without --pool"}},
			{"allow-host", []string{"run", "--pool", p.name, "--allow-host", "example.com"}, nil, []string{"--allow-host", `only network.mode = "allowlist"`}},
			{"other network", []string{"run", "--pool", p.name, "--network", "open"}, nil, []string{"network none", `network.mode "open"`, "--network none"}},
			{"allowlist", []string{"host", "--pool", p.name, "--agent-mode", "acp", "--network", "allowlist"}, nil, []string{"network none", `"allowlist"`}},
			{"other settings", []string{"run", "--pool", p.name}, []string{"PODBOT_CONFIG_PATH=" + other}, []string{"member " + podbot.MemberPrefix + p.name, "resources", "PidsLimit", "run without --pool"}},
			{"--wait alone", []string{"run", "--wait", "5s"}, nil, []string{"--wait needs --pool"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				cmd := p.cmd(ctx, c.args...)
				cmd.Env = append(cmd.Env, c.env...)
				var out, errOut bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errOut
				code := exitStatus(t, cmd.Run(), c.args)
				if code == 0 {
					t.Fatalf("podbot %v succeeded:\n%s", c.args, errOut.String())
				}
				for _, w := range c.want {
					if !strings.Contains(errOut.String(), w) {
						t.Errorf("podbot %v (exit %d): stderr lacks %q:\n%s", c.args, code, w, errOut.String())
					}
				}
				if out.Len() != 0 {
					t.Errorf("podbot %v wrote to stdout: %q", c.args, out.String())
				}
			})
		}
		if r := p.ls(t, ctx); r.Ready != 1 || r.Claimed != 0 {
			t.Errorf("after the refusals the pool is %+v; want its one member still ready", r)
		}
	})
}

// TestPoolRunClaimedLikeCold: an agent sandbox claimed through the
// library's Launch has, in the engine's inspect, the same hardening,
// limits, mounts, network and podbot labels as one launched cold (from
// the empty pool, and without a pool).
func TestPoolRunClaimedLikeCold(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		conn := poolConn(t, ctx, e)
		sidecar := filepath.Join(suite.bin, "podbot-sidecar")
		for _, network := range []string{config.NetworkNone, config.NetworkOpen, config.NetworkAllowlist} {
			t.Run(network, func(t *testing.T) {
				cfg := config.Default()
				cfg.Image = sandboxImage
				cfg.Agent.Kind, cfg.Agent.Command, cfg.Agent.Args = config.KindCustom, "sleep", []string{"60"}
				cfg.Creds.CopyClaude, cfg.Creds.CopyCodex = false, false
				cfg.Network.Mode = network
				spec := pool.Spec{Name: "like-" + network + "-" + suite.runID[:6], Kind: pool.KindAgent, Size: 1, Network: network, PidsLimit: 321}
				b := podbot.NewPoolBackend(conn, podbot.PoolOptions{Config: cfg, SidecarPath: sidecar})
				m, err := b.Create(ctx, spec)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = b.Remove(context.Background(), m) })
				launchOne := func(purpose string, withPool bool) (*podbot.Sandbox, podbot.ClaimReport) {
					var rep podbot.ClaimReport
					opts := podbot.LaunchOptions{Config: cfg, Intent: launchplan.IntentInteractive, SidecarPath: sidecar,
						Name: testName(e, purpose+"-"+network), RuntimeDir: runtimeDir(t), OnClaim: func(r podbot.ClaimReport) { rep = r }}
					removeOnCleanup(t, e, opts.Name)
					if withPool {
						opts.Pool = &spec
					} else {
						opts.Config.Sandbox.PidsLimit = 321 // the pool's template, by hand
					}
					sb, err := podbot.Launch(ctx, conn, opts)
					if err != nil {
						t.Fatalf("launch %s: %v", purpose, err)
					}
					t.Cleanup(func() { _ = sb.Close(context.Background(), true) })
					return sb, rep
				}
				warm, wr := launchOne("like-warm", true)
				if wr.Outcome != podbot.ClaimWarm || wr.Member != m.Name || warm.ID != m.ID {
					t.Fatalf("first launch: %+v (id %s), want a warm claim of %s", wr, warm.ID, m.Name)
				}
				cold, cr := launchOne("like-cold", true)
				if cr.Outcome != podbot.ClaimCold {
					t.Fatalf("second launch: %+v, want cold", cr)
				}
				plain, _ := launchOne("like-plain", false)
				w := securityView(t, ctx, e, warm.Name)
				for _, other := range []string{cold.Name, plain.Name} {
					c := securityView(t, ctx, e, other)
					for k, v := range w {
						if !reflect.DeepEqual(v, c[k]) {
							t.Errorf("%s: claimed %s has %s = %s, cold %s has %s", e.Name, warm.Name, k, v, other, c[k])
						}
					}
				}
				if t.Failed() {
					return
				}
				t.Logf("%s %s: claimed and cold sandboxes agree on %d inspect fields", e.Name, network, len(w))
			})
		}
	})
}

// securityView is the security-relevant part of a container's inspect,
// each field as JSON.
func securityView(t *testing.T, ctx context.Context, e engineUnderTest, name string) map[string]string {
	t.Helper()
	in, err := e.API.ContainerInspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if !in.State.Running || in.State.Paused {
		t.Errorf("%s is not running unpaused: %+v", name, in.State)
	}
	j := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	hc, cf := in.HostConfig, in.Config
	mounts := make([]string, 0, len(in.Mounts))
	for _, m := range in.Mounts {
		mounts = append(mounts, fmt.Sprintf("%s:%s:%s:rw=%v", m.Type, m.Source, m.Destination, m.RW))
	}
	slices.Sort(mounts)
	nets := make([]string, 0, len(in.NetworkSettings.Networks))
	for k := range in.NetworkSettings.Networks {
		nets = append(nets, k)
	}
	slices.Sort(nets)
	labels := map[string]string{}
	for _, k := range []string{"podbot.managed", "podbot.egress.mode", "podbot.version"} {
		labels[k] = cf.Labels[k]
	}
	// An allowlist sandbox's internal network is its own, named after the
	// sandbox (a claimed member's after the member): compared by shape.
	networkMode := string(hc.NetworkMode)
	if eg := cf.Labels["podbot.egress.name"]; eg != "" {
		own := "podbot-net-" + eg
		if networkMode == own {
			networkMode = "podbot-net-<sandbox>"
		}
		for i, n := range nets {
			if n == own {
				nets[i] = "podbot-net-<sandbox>"
			}
		}
	}
	return map[string]string{
		"Image": j(cf.Image), "User": j(cf.User), "Cmd": j(cf.Cmd), "Entrypoint": j(cf.Entrypoint),
		"Privileged": j(hc.Privileged), "ReadonlyRootfs": j(hc.ReadonlyRootfs), "CapAdd": j(sortedCopy(hc.CapAdd)),
		"CapDrop": j(sortedCopy(hc.CapDrop)), "SecurityOpt": j(sortedCopy(hc.SecurityOpt)), "Devices": j(hc.Devices),
		"DeviceRequests": j(hc.DeviceRequests), "PidsLimit": j(hc.PidsLimit), "Memory": j(hc.Memory), "NanoCPUs": j(hc.NanoCPUs),
		"CpusetCpus": j(hc.CpusetCpus), "NetworkMode": j(networkMode), "Tmpfs": j(hc.Tmpfs), "Mounts": j(mounts),
		"IpcMode": j(hc.IpcMode), "PidMode": j(hc.PidMode), "UsernsMode": j(hc.UsernsMode), "CgroupnsMode": j(hc.CgroupnsMode),
		"Init": j(hc.Init), "Runtime": j(hc.Runtime), "ShmSize": j(hc.ShmSize), "MaskedPaths": j(hc.MaskedPaths),
		"ReadonlyPaths": j(hc.ReadonlyPaths), "Sysctls": j(hc.Sysctls), "DNS": j(hc.DNS), "ExtraHosts": j(hc.ExtraHosts),
		"Networks": j(nets), "Labels": j(labels), "AppArmor": j(in.AppArmorProfile), "Driver": j(in.Driver),
	}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// TestPoolHostACP: podbot host --pool claims a member, clones the
// repository holding a reporting ACP agent (e2e/testdata/acpreport) into
// it, and serves ACP under the policy: the client advertises files and
// terminals, and the agent sees neither capability, its fs/read_text_file
// and terminal/create requests are answered by podbot with a refusal and
// never reach the client, stdout carries frames only, the claim is
// reported on stderr, and the sandbox is removed at the end. A second host
// finds the pool empty, says so and serves the same session cold.
func TestPoolHostACP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	agent := filepath.Join(t.TempDir(), "acpreport")
	build := exec.CommandContext(ctx, "go", "build", "-o", agent, "./testdata/acpreport")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the reporting ACP agent: %v\n%s", err, out)
	}
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		repos := t.TempDir()
		r := newHostRepo(t, repos, "acme/acp", "feature")
		r.addExecutable(t, "feature", agent, "acpreport")
		base := startAnonGitServer(t, ctx, e, repos)
		cfg := fmt.Sprintf(`[agent]
kind = "custom"
mode = "acp"
command = "/work/acp/acpreport"
[creds]
copy_claude = false
copy_codex = false
[network]
mode = "open"
[github]
clone_base_url = %q
`, base)
		p := newPoolRunEnv(t, e, "host", cfg)
		p.mustRun(t, ctx, "pool", "create", p.name, "--size", "1", "--kind", "agent", "--network", "open")
		for i, outcome := range []string{"warm", "cold"} {
			name := testName(e, fmt.Sprintf("poolhost%d", i))
			removeOnCleanup(t, e, name)
			stderr, text, reqs := hostSDKSession(t, ctx, p.cmd(ctx, "host", "--pool", p.name, "--name", name, "--repo", "acme/acp", "--branch", "feature"), "/work/acp")
			switch outcome {
			case "warm":
				if m := claimedRe.FindStringSubmatch(stderr); m == nil || m[4] != name {
					t.Errorf("host --pool did not report a warm claim:\n%s", stderr)
				}
			case "cold":
				if !strings.Contains(stderr, "has no ready member: launching cold") {
					t.Errorf("host --pool on an empty pool did not say it launched cold:\n%s", stderr)
				}
			}
			if reqs != "" {
				t.Errorf("%s: the client received agent requests %q; podbot must answer them itself", outcome, reqs)
			}
			var rep struct {
				Capabilities struct {
					Fs       map[string]bool `json:"fs"`
					Terminal bool            `json:"terminal"`
				} `json:"capabilities"`
				FsError       string `json:"fs_error"`
				TerminalError string `json:"terminal_error"`
			}
			if err := json.Unmarshal([]byte(text), &rep); err != nil {
				t.Fatalf("%s: the agent's report is not JSON (%v): %q\n%s", outcome, err, text, stderr)
			}
			if rep.Capabilities.Terminal || rep.Capabilities.Fs["readTextFile"] || rep.Capabilities.Fs["writeTextFile"] {
				t.Errorf("%s: the agent saw the client's host capabilities: %s", outcome, text)
			}
			if !strings.Contains(rep.FsError, "fs/read_text_file") || !strings.Contains(rep.TerminalError, "terminal/create") {
				t.Errorf("%s: the agent's requests were not refused by name: %s", outcome, text)
			}
			if !strings.Contains(stderr, "refused an agent request") {
				t.Errorf("%s: refusals were not logged on stderr:\n%s", outcome, stderr)
			}
			assertRemoved(t, ctx, e, name)
		}
	})
}

// hostSDKSession drives podbot host (cmd) with the Go SDK client,
// advertising file and terminal capabilities, through one prompt, checks
// that the turn ended, podbot exited 0 and wrote only frames to stdout,
// and returns podbot's stderr, the agent's message text and the requests
// the client received.
func hostSDKSession(t *testing.T, ctx context.Context, cmd *exec.Cmd, cwd string) (stderrText, text, reqs string) {
	t.Helper()
	var stdoutCopy, stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("podbot stderr:\n%s", stderr.String())
		}
	}()
	client := &goSDKClient{}
	conn := acpsdk.NewClientSideConnection(client, stdin, io.TeeReader(stdout, &stdoutCopy))
	conn.SetLogger(slog.New(slog.DiscardHandler))
	if _, err := conn.Initialize(ctx, acpsdk.InitializeRequest{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientCapabilities: acpsdk.ClientCapabilities{
			Fs:       acpsdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true},
			Terminal: true,
		},
	}); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("initialize: %v\n%s", err, stderr.String())
	}
	sess, err := conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	resp, err := conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: sess.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("report")}})
	if err != nil {
		t.Fatalf("session/prompt: %v", err)
	}
	stdin.Close()
	if code := exitStatus(t, cmd.Wait(), cmd.Args); code != 0 {
		t.Errorf("podbot host exit %d after stdin closed, want 0", code)
	}
	if resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Errorf("stop reason %q, want end_turn", resp.StopReason)
	}
	assertFramesOnly(t, stdoutCopy.Bytes())
	client.mu.Lock()
	defer client.mu.Unlock()
	return stderr.String(), client.text.String(), strings.Join(client.requests, ",")
}

// TestPoolRunWaits: podbot run --pool --wait on an empty pool waits for
// the member the refiller makes, takes it and says it waited.
func TestPoolRunWaits(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		p := newPoolRunEnv(t, e, "wait", `[agent]
kind = "custom"
command = "/bin/true"
[creds]
copy_claude = false
copy_codex = false
[network]
mode = "none"
`)
		p.mustRun(t, ctx, "pool", "create", p.name, "--size", "0", "--kind", "agent", "--network", "none")
		name := testName(e, "poolwait")
		removeOnCleanup(t, e, name)
		cmd := p.cmd(ctx, "run", "--pool", p.name, "--wait", "90s", "--name", name, "--rm")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The claim is waiting on an empty pool; now let the refiller fill it.
		time.Sleep(time.Second)
		p.mustRun(t, ctx, "pool", "resize", p.name, "1", "--no-fill")
		p.serve(t, ctx)
		if code := exitStatus(t, cmd.Wait(), cmd.Args); code != 0 {
			t.Fatalf("run --pool --wait: exit %d\n%s", code, errOut.String())
		}
		if !regexp.MustCompile(`podbot: pool: waited for and claimed member podbot-pool-` + p.name + `-[0-9a-f]{12} of pool ` + p.name + ` in [0-9.]+ ms; it is now ` + name).MatchString(errOut.String()) {
			t.Errorf("run --pool --wait did not say it waited:\n%s", errOut.String())
		}
		if out.Len() != 0 {
			t.Errorf("stdout: %q", out.String())
		}
	})
}
