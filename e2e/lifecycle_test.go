//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/launchplan"
)

// capNumbers are the Linux capability numbers of the names podbot keeps.
var capNumbers = map[string]uint{
	"CHOWN": 0, "DAC_OVERRIDE": 1, "DAC_READ_SEARCH": 2, "FOWNER": 3, "FSETID": 4, "KILL": 5,
	"SETGID": 6, "SETUID": 7, "SETPCAP": 8, "LINUX_IMMUTABLE": 9, "NET_BIND_SERVICE": 10,
	"NET_RAW": 13, "SYS_CHROOT": 18, "SYS_ADMIN": 21, "MKNOD": 27, "AUDIT_WRITE": 29, "SETFCAP": 31,
}

// statusField returns the value of a "Key:\tvalue" line of /proc/self/status.
func statusField(status, key string) string {
	for _, line := range strings.Split(status, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func TestLifecycleHardening(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		name := createSandbox(t, ctx, e, "hard", "--network", "none", "--read-only", "--memory", "256m", "--pids-limit", "100")

		status := mustExec(t, ctx, e, name, "cat", "/proc/self/status")
		var want uint64
		for _, c := range launchplan.DefaultKeptCapabilities() {
			n, ok := capNumbers[c]
			if !ok {
				t.Fatalf("test does not know capability %s", c)
			}
			want |= 1 << n
		}
		for _, key := range []string{"CapEff", "CapPrm", "CapBnd"} {
			got, err := strconv.ParseUint(statusField(status, key), 16, 64)
			if err != nil || got != want {
				t.Errorf("%s = %q, want %016x (the documented kept set %v)", key, statusField(status, key), want, launchplan.DefaultKeptCapabilities())
			}
		}
		if v := statusField(status, "NoNewPrivs"); v != "1" {
			t.Errorf("NoNewPrivs = %q, want 1", v)
		}

		if got := strings.TrimSpace(mustExec(t, ctx, e, name, "cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes")); got != strconv.Itoa(256<<20) {
			t.Errorf("memory limit %s, want %d", got, 256<<20)
		}
		if got := strings.TrimSpace(mustExec(t, ctx, e, name, "cat", "/sys/fs/cgroup/pids/pids.max")); got != "100" {
			t.Errorf("pids.max %s, want 100", got)
		}

		ifaces := mustExec(t, ctx, e, name, "ls", "/sys/class/net")
		if got := strings.Fields(ifaces); len(got) != 1 || got[0] != "lo" {
			t.Errorf("network interfaces %v, want only lo", got)
		}
		netdev := mustExec(t, ctx, e, name, "cat", "/proc/net/dev")
		for _, line := range strings.Split(netdev, "\n")[2:] {
			if iface, _, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && iface != "lo" {
				t.Errorf("/proc/net/dev lists %s besides lo", iface)
			}
		}

		if res := runPodbot(t, ctx, e, "exec", "-T", name, "--", "touch", "/x"); res.Code == 0 || !strings.Contains(res.Stderr, "Read-only file system") {
			t.Errorf("touch /x on a read-only root: exit %d, stderr %q; want a read-only failure", res.Code, res.Stderr)
		}
		mustExec(t, ctx, e, name, "sh", "-c", "echo ok > /tmp/w && cat /tmp/w")

		// No engine socket anywhere in the filesystem, /run or the environment.
		socks := mustExec(t, ctx, e, name, "sh", "-c",
			`find / \( -path /proc -o -path /sys \) -prune -o \( -type s -o -name '*.sock' \) -print 2>/dev/null; `+
				`find / -xdev -name '*.sock' 2>/dev/null; ls -la /run /var/run 2>/dev/null | grep -Ei 'docker|podman' || true`)
		if strings.TrimSpace(socks) != "" {
			t.Errorf("sockets visible in the sandbox:\n%s", socks)
		}
		env := mustExec(t, ctx, e, name, "env")
		for _, bad := range []string{"DOCKER_HOST", "CONTAINER_HOST", "PODMAN_HOST", "docker.sock", "podman.sock"} {
			if strings.Contains(env, bad) {
				t.Errorf("environment mentions %s:\n%s", bad, env)
			}
		}
		pid1 := mustExec(t, ctx, e, name, "cat", "/proc/1/cmdline")
		if !strings.HasPrefix(pid1, podbot.SidecarTarget+"\x00init") {
			t.Errorf("PID 1 is %q, want %s init", pid1, podbot.SidecarTarget)
		}

		res := runPodbot(t, ctx, e, "ps", "--json")
		var rows []podbot.Container
		decodeJSON(t, res.Stdout, &rows)
		var found *podbot.Container
		for i := range rows {
			if rows[i].Name == name {
				found = &rows[i]
			}
		}
		if found == nil {
			t.Fatalf("ps --json does not list %s:\n%s", name, res.Stdout)
		}
		wantLabels := map[string]string{
			launchplan.LabelManaged: "true", launchplan.LabelVersion: podbot.Version,
			launchplan.LabelIntent: "interactive", launchplan.LabelAgentKind: "none",
		}
		for k, v := range wantLabels {
			if found.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, found.Labels[k], v)
			}
		}
		if found.Labels[launchplan.LabelSession] == "" || found.State != "running" {
			t.Errorf("ps row %+v: want a session label and state running", *found)
		}
	})
}

func TestLifecycleConfiguredUser(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		name := testName(e, "user")
		removeOnCleanup(t, e, name)
		cmd := podbotCmd(t, ctx, e, "[sandbox]\nuser = \"1000:1000\"\n", "create", "--name", name)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("create with sandbox.user: %v\n%s", err, out)
		}
		if got := strings.TrimSpace(mustExec(t, ctx, e, name, "id", "-u")); got != "1000" {
			t.Errorf("id -u = %s, want 1000 (sandbox.user)", got)
		}
		status := mustExec(t, ctx, e, name, "cat", "/proc/self/status")
		for _, key := range []string{"CapEff", "CapPrm", "CapAmb"} {
			if v := statusField(status, key); v != "0000000000000000" {
				t.Errorf("a non-root user holds capabilities: %s = %s", key, v)
			}
		}
	})
}

func TestExecExitCodes(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		name := createSandbox(t, ctx, e, "codes")
		cases := []struct {
			script string
			want   int
		}{
			{"exit 0", 0}, {"exit 1", 1}, {"exit 42", 42}, {"exit 255", 255},
			{"kill -9 $$", 137}, {"kill -TERM $$", 143},
		}
		for _, tc := range cases {
			res := runPodbot(t, ctx, e, "exec", name, "--", "sh", "-c", tc.script)
			if res.Code != tc.want {
				t.Errorf("exec sh -c %q: exit %d, want %d (stderr %q)", tc.script, res.Code, tc.want, res.Stderr)
			}
			if tc.want != 0 && strings.Contains(res.Stderr, "podbot:") {
				t.Errorf("a command's own exit status is reported as a podbot error: %q", res.Stderr)
			}
		}
		if res := runPodbot(t, ctx, e, "exec", name, "--", "no-such-command"); res.Code != 127 && res.Code != 126 {
			t.Errorf("a missing command: exit %d, want 126 or 127 (stderr %q)", res.Code, res.Stderr)
		}
	})
}

func TestExecDetached(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		name := createSandbox(t, ctx, e, "detach")
		res := runPodbot(t, ctx, e, "exec", "-d", "-e", "MSG=hello", "-w", "/tmp", name, "--",
			"sh", "-c", `sleep 1; echo "$MSG from $(pwd)" > /tmp/detached; echo noise; exit 3`)
		if res.Code != 3 || res.Stdout != "" {
			t.Fatalf("exec -d: exit %d stdout %q, want exit 3 and no output (stderr %q)", res.Code, res.Stdout, res.Stderr)
		}
		// exec -d waited for completion, so the file is there now.
		if got := mustExec(t, ctx, e, name, "cat", "/tmp/detached"); got != "hello from /tmp\n" {
			t.Errorf("detached command wrote %q", got)
		}
	})
}

func TestExecProtocolFidelity(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		name := createSandbox(t, ctx, e, "bytes")
		payload := make([]byte, 1<<20)
		if _, err := rand.Read(payload); err != nil {
			t.Fatal(err)
		}
		res := runPodbotIn(t, ctx, e, bytes.NewReader(payload), "exec", "-T", name, "--", "cat")
		if res.Code != 0 {
			t.Fatalf("exec -T cat: exit %d: %s", res.Code, res.Stderr)
		}
		if !bytes.Equal([]byte(res.Stdout), payload) {
			t.Fatalf("1 MiB through cat came back different: %d bytes, want %d", len(res.Stdout), len(payload))
		}
		res = runPodbotIn(t, ctx, e, nil, "exec", "-T", name, "--", "sh", "-c", "echo out; echo err >&2")
		if res.Stdout != "out\n" || !strings.Contains(res.Stderr, "err\n") {
			t.Errorf("stdout %q stderr %q: want stdout to carry stdout only", res.Stdout, res.Stderr)
		}
	})
}

func TestLogsFollow(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		name := createSandbox(t, ctx, e, "logs", "--", "sh", "-c",
			`echo first; echo to-stderr >&2; i=0; while :; do echo "tick $i"; i=$((i+1)); sleep 0.2; done`)

		fctx, fcancel := context.WithCancel(ctx)
		defer fcancel()
		cmd := podbotCmd(t, fctx, e, "", "logs", "-f", name)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		var lines []string
		ticks := 0
		for ticks < 8 && sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.HasPrefix(sc.Text(), "tick ") {
				ticks++
			}
		}
		fcancel()
		_ = cmd.Wait()
		if ticks < 8 || lines[0] != "first" {
			t.Fatalf("logs -f gave %v, want first then a stream of ticks (stderr %q)", lines, stderr.String())
		}
		if !strings.Contains(stderr.String(), "to-stderr") {
			t.Errorf("the container's stderr did not reach podbot's stderr: %q", stderr.String())
		}
		res := runPodbot(t, ctx, e, "logs", "--tail", "1", name)
		if res.Code != 0 || !regexp.MustCompile(`^tick [0-9]+\n$`).MatchString(res.Stdout) {
			t.Errorf("logs --tail 1: exit %d stdout %q, want one tick line", res.Code, res.Stdout)
		}
	})
}

func TestStopTimeout(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		name := createSandbox(t, ctx, e, "stop", "--", "sh", "-c", `trap "" TERM; while :; do sleep 1; done`)
		start := time.Now()
		res := runPodbot(t, ctx, e, "stop", "-t", "1", name)
		took := time.Since(start)
		if res.Code != 0 || strings.TrimSpace(res.Stdout) != name {
			t.Fatalf("stop -t 1: exit %d stdout %q stderr %q", res.Code, res.Stdout, res.Stderr)
		}
		if took < time.Second {
			t.Errorf("stop -t 1 of a container ignoring SIGTERM returned after %v; the grace period was skipped", took)
		}
		info, err := e.API.ContainerInspect(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Running || info.State.ExitCode != 137 {
			t.Errorf("after stop: running=%v exit=%d, want stopped by SIGKILL (137)", info.State.Running, info.State.ExitCode)
		}
		if res := runPodbot(t, ctx, e, "stop", name); res.Code != 0 {
			t.Errorf("stopping a stopped container: exit %d %s", res.Code, res.Stderr)
		}
		if res := runPodbot(t, ctx, e, "rm", name); res.Code != 0 || len(containersNamed(t, ctx, e, name)) != 0 {
			t.Errorf("rm of the stopped container: exit %d %s", res.Code, res.Stderr)
		}
	})
}

func TestPruneDryRun(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		stopped := createSandbox(t, ctx, e, "prune-stopped")
		running := createSandbox(t, ctx, e, "prune-running")
		if res := runPodbot(t, ctx, e, "stop", "-t", "0", stopped); res.Code != 0 {
			t.Fatalf("stop: %s", res.Stderr)
		}
		res := runPodbot(t, ctx, e, "prune", "--dry-run")
		if res.Code != 0 {
			t.Fatalf("prune --dry-run: exit %d %s", res.Code, res.Stderr)
		}
		if !strings.Contains(res.Stdout, "would remove container "+stopped) {
			t.Errorf("prune --dry-run does not list %s:\n%s", stopped, res.Stdout)
		}
		if strings.Contains(res.Stdout, running) {
			t.Errorf("prune --dry-run lists the running %s:\n%s", running, res.Stdout)
		}
		for _, n := range []string{stopped, running} {
			if len(withoutProxies(containersNamed(t, ctx, e, n))) != 1 {
				t.Errorf("prune --dry-run removed %s", n)
			}
		}
	})
}

func TestRefusesForeignContainer(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		name := testName(e, "foreign")
		removeOnCleanup(t, e, name)
		out, err := exec.CommandContext(ctx, "sh", "-c", engineCLI(e)+" create --name "+name+" localhost/podbot-sandbox:latest sleep 600").CombinedOutput()
		if err != nil {
			t.Fatalf("create a foreign container: %v\n%s", err, out)
		}
		res := runPodbot(t, ctx, e, "rm", "-f", name)
		if res.Code != 4 || !strings.Contains(res.Stderr, "--any") {
			t.Errorf("rm of a foreign container: exit %d stderr %q, want refused with a hint naming --any", res.Code, res.Stderr)
		}
		if res := runPodbot(t, ctx, e, "rm", "-f", "--any", name); res.Code != 0 {
			t.Errorf("rm --any: exit %d %s", res.Code, res.Stderr)
		}
	})
}

// TestCreatePrivilegedAllowlist: the privileged profile could change its
// own routes and leave its network, so under the default allowlist mode
// podbot create refuses it as a configuration conflict (exit 3) naming
// network.mode, and makes nothing.
func TestCreatePrivilegedAllowlist(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		name := testName(e, "privlock")
		removeOnCleanup(t, e, name)
		res := runPodbot(t, ctx, e, "create", "--privileged", "--name", name)
		if res.Code != 3 || !strings.Contains(res.Stderr, "network.mode") || !strings.Contains(res.Stderr, "privileged") {
			t.Fatalf("privileged allowlist create: exit %d, stderr %s; want 3 naming network.mode", res.Code, res.Stderr)
		}
		if rows := containersNamed(t, ctx, e, name); len(rows) != 0 {
			t.Fatalf("the refused create left %d containers", len(rows))
		}
	})
}

// engineCLI is the engine's own CLI pointed at the test engine.
func engineCLI(e engineUnderTest) string {
	if e.Name == "podman" {
		return "podman --url " + e.Endpoint
	}
	return "docker -H " + e.Endpoint
}

func TestCreatePrivileged(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		name := testName(e, "priv")
		removeOnCleanup(t, e, name)
		// The privileged profile could undo an allowlist sandbox's network
		// lock, so it takes an explicit --network open (TestCreatePrivilegedAllowlist).
		res := runPodbot(t, ctx, e, "create", "--privileged", "--network", "open", "--name", name)
		if e.Name == "podman" {
			if res.Code != 0 {
				t.Fatalf("privileged create on Podman: exit %d %s", res.Code, res.Stderr)
			}
			return
		}
		// dockerd here cannot run privileged containers: the error must say so.
		if res.Code != 4 {
			t.Fatalf("privileged create on dockerd: exit %d (stdout %q), want 4 with a plain error", res.Code, res.Stdout)
		}
		for _, want := range []string{"privileged profile", "cannot run privileged containers", "Podman"} {
			if !strings.Contains(res.Stderr, want) {
				t.Errorf("the error does not say %q:\n%s", want, res.Stderr)
			}
		}
		if n := len(containersNamed(t, ctx, e, name)); n != 0 {
			t.Errorf("the failed privileged create left %d containers", n)
		}
	})
}

func TestCreateInterruptedLeavesNothing(t *testing.T) {
	t.Parallel() // long, and touches only what it names (see forEachEngine)
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		interrupted := 0
		offsets := []time.Duration{0, 10 * time.Millisecond, 30 * time.Millisecond, 60 * time.Millisecond,
			100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 500 * time.Millisecond,
			750 * time.Millisecond, time.Second, 1500 * time.Millisecond, 2 * time.Second}
		for i, off := range offsets {
			name := testName(e, fmt.Sprintf("sigint%d", i))
			removeOnCleanup(t, e, name)
			cmd := podbotCmd(t, ctx, e, "", "create", "--name", name)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(off)
			_ = cmd.Process.Signal(syscall.SIGINT)
			code := exitStatus(t, cmd.Wait(), nil)
			if code == 0 {
				// It finished before the signal: a created container is right.
				if strings.TrimSpace(out.String()) != name {
					t.Errorf("offset %v: exit 0 but printed %q", off, out.String())
				}
				continue
			}
			interrupted++
			if code != 130 && code != -1 {
				t.Errorf("offset %v: exit %d, want 130 for an interrupted create (stderr %q)", off, code, errOut.String())
			}
			for _, wait := range []time.Duration{0, time.Second} {
				time.Sleep(wait)
				if rows := containersNamed(t, ctx, e, name); len(rows) != 0 {
					t.Fatalf("offset %v: an interrupted create left %s (state %s)", off, rows[0].Names, rows[0].State)
				}
			}
		}
		if interrupted == 0 {
			t.Fatalf("no create was interrupted at any offset %v", offsets)
		}
		t.Logf("%d of %d creates interrupted (the rest finished first), none left a container", interrupted, len(offsets))
	})
}

// lockedBuffer is a bytes.Buffer safe for one writer and one reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
