//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/sandbox"
	"github.com/podbot/podbot/tools"
)

// percentile returns the p-th percentile (0-100) of ds.
func toolsPercentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

func toolsMS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// engineCLI returns the engine's own CLI pointed at its socket.
func toolsEngineCLI(e engineUnderTest) []string {
	if e.Name == "podman" {
		return []string{"podman", "--url", e.Endpoint}
	}
	return []string{"docker", "-H", e.Endpoint}
}

// apiExec runs argv in a container with one Engine API exec and waits for it.
func toolsAPIExec(ctx context.Context, e engineUnderTest, id string, argv ...string) error {
	created, err := e.API.ContainerExecCreate(ctx, id, container.ExecOptions{AttachStdout: true, AttachStderr: true, Cmd: argv})
	if err != nil {
		return err
	}
	hj, err := e.API.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, hj.Reader)
	hj.Close()
	if err != nil {
		return err
	}
	_, err = e.API.ContainerExecInspect(ctx, created.ID)
	return err
}

// toolsEchoStream opens one attached exec of cat in the container and
// returns a function that sends a line through it and waits for the echo:
// the floor under any call over a long-lived exec stream.
func toolsEchoStream(b *testing.B, ctx context.Context, e engineUnderTest, id string) func() error {
	return toolsLineStream(b, ctx, e, id, "cat")
}

// toolsSpawnScript starts /usr/bin/true for every line it reads, waits for
// it, and echoes the line: the least any server at the end of an exec
// stream can do to run a program per request.
const toolsSpawnScript = `import os, sys
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    os.waitpid(os.posix_spawn("/usr/bin/true", ["true"], {}), 0)
    out.write(line)
    out.flush()
`

// toolsSpawnEchoStream is toolsEchoStream with a program started per line
// (toolsSpawnScript): the floor under shell_execute ["true"] over an exec
// stream, the stream's hops and the spawn as they come in a round trip.
func toolsSpawnEchoStream(b *testing.B, ctx context.Context, e engineUnderTest, id string) func() error {
	return toolsLineStream(b, ctx, e, id, "python3", "-c", toolsSpawnScript)
}

// toolsLineStream opens one attached exec of argv in the container and
// returns a function that sends a line to it and waits for one back.
func toolsLineStream(b *testing.B, ctx context.Context, e engineUnderTest, id string, argv ...string) func() error {
	b.Helper()
	created, err := e.API.ContainerExecCreate(ctx, id, container.ExecOptions{AttachStdin: true, AttachStdout: true, AttachStderr: true, Cmd: argv})
	if err != nil {
		b.Fatal(err)
	}
	hj, err := e.API.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(hj.Close)
	pr, pw := io.Pipe()
	go func() { _, err := stdcopy.StdCopy(pw, io.Discard, hj.Reader); pw.CloseWithError(err) }()
	br := bufio.NewReader(pr)
	line := []byte(strings.Repeat("x", 255) + "\n")
	return func() error {
		if _, err := hj.Conn.Write(line); err != nil {
			return err
		}
		_, err := br.ReadSlice('\n')
		return err
	}
}

// toolsMaxSidecarRSS is the target for the sidecar's resident memory when idle.
const toolsMaxSidecarRSS = 20 << 20

// toolsSidecarUsage reads the sidecar's CPU time so far and its resident
// memory from inside the sandbox: a command's parent is the sidecar, so
// /proc/$PPID is the sidecar's (same user, same pid namespace).
func toolsSidecarUsage(b *testing.B, ctx context.Context, s sandbox.Session) (cpu time.Duration, rssBytes int64) {
	b.Helper()
	res, err := sandbox.Invoke[tools.ShellResult](ctx, s, tools.ShellExecuteTool, tools.ShellParams{
		Command: []string{"sh", "-c", `cat /proc/$PPID/stat; grep '^VmRSS:' /proc/$PPID/status`}})
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("read sidecar usage: %v %+v", err, res)
	}
	stat, status, _ := strings.Cut(res.Stdout, "\n")
	// Fields after the command name: state is 3, utime 14 and stime 15 (1-based, man 5 proc).
	f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	if len(f) < 13 {
		b.Fatalf("unexpected /proc stat line %q", stat)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	rss := strings.Fields(status) // "VmRSS:", value, "kB"
	if len(rss) < 2 {
		b.Fatalf("unexpected /proc status line %q", status)
	}
	kib, err3 := strconv.ParseInt(rss[1], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		b.Fatalf("parse sidecar usage %q: %v", res.Stdout, err)
	}
	const clockTicks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / clockTicks, kib << 10
}

// toolsSidecarCPU returns the CPU time the sidecar itself (not the
// commands it starts) spends per call of tool with args, over 300 calls in
// a row: what a call costs on the sandbox's CPU besides its command.
func toolsSidecarCPU(b *testing.B, ctx context.Context, s sandbox.Session, args json.RawMessage, tool string) float64 {
	b.Helper()
	const calls = 300
	cpu0, _ := toolsSidecarUsage(b, ctx, s)
	for range calls {
		if _, err := s.Call(ctx, tool, args); err != nil {
			b.Fatal(err)
		}
	}
	cpu1, _ := toolsSidecarUsage(b, ctx, s)
	return float64(cpu1-cpu0) / calls / float64(time.Microsecond)
}

// toolsSpawnFloor measures, inside the session's container, what starting
// /usr/bin/true and waiting for it costs with nothing else around it
// (posix_spawn from one Python process, 200 times): the floor under any
// shell_execute of a program on that kernel and filesystem.
func toolsSpawnFloor(b *testing.B, ctx context.Context, s sandbox.Session) time.Duration {
	b.Helper()
	const script = "import os,time\nts=[]\nfor _ in range(200):\n t=time.perf_counter(); p=os.posix_spawn('/usr/bin/true',['true'],{}); os.waitpid(p,0); ts.append(time.perf_counter()-t)\nts.sort(); print(int(ts[100]*1e9))"
	res, err := sandbox.Invoke[tools.ShellResult](ctx, s, tools.ShellExecuteTool, tools.ShellParams{Command: []string{"python3", "-c", script}})
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("spawn floor: %v %+v", err, res)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(res.Stdout), 10, 64)
	if err != nil {
		b.Fatalf("spawn floor: %v", err)
	}
	return time.Duration(ns)
}

// toolsRoundTrip is what the sidecar phase of BenchmarkToolsRoundTrip
// measured on one engine: the p50s the exec phase compares against.
type toolsRoundTrip struct {
	shell50, read50 time.Duration
	// spawnStream50 is the stream-spawn floor: no server that starts a
	// program per request over an exec stream can answer faster.
	spawnStream50 time.Duration
}

// BenchmarkToolsRoundTrip measures one tool call through the sidecar
// stream against one Engine API exec per call and one CLI exec per call,
// in the same run on the same image. The sidecar phases of every engine
// run first (<engine>), the exec phases after them (<engine>-exec): an
// exec leaves work behind that outlives the call (Podman keeps each exec
// session's conmon for five minutes and then cleans it up), which would
// otherwise land on the next engine's sidecar calls. Within the sidecar
// phase the calls alternate with a raw echo through an exec stream, their
// floor, and with a line through a stream whose server starts
// /usr/bin/true per line (stream-spawn), the floor under shell_execute
// ["true"] in a round trip; the spawn floor (starting /usr/bin/true in a
// tight loop in the container, nothing else) is the bare cost of a spawn.
func BenchmarkToolsRoundTrip(b *testing.B) {
	measured := map[string]toolsRoundTrip{}
	for _, e := range suite.engines {
		b.Run(e.Name, func(b *testing.B) { measured[e.Name] = toolsSidecarPhase(b, e) })
	}
	for _, e := range suite.engines {
		b.Run(e.Name+"-exec", func(b *testing.B) { toolsExecPhase(b, e, measured[e.Name]) })
	}
}

// toolsSidecarPhase times shell_execute ["true"] and read_file of 1 KiB
// through the sidecar stream, and the sidecar's CPU and idle memory.
func toolsSidecarPhase(b *testing.B, e engineUnderTest) toolsRoundTrip {
	ctx := context.Background()
	s, _ := toolSession(b, ctx, e, nil, nil)
	content := strings.Repeat("0123456789abcde\n", 64) // 1 KiB
	args, _ := json.Marshal(map[string]string{"file_path": "kib.txt", "content": content})
	if _, err := s.Call(ctx, tools.WriteFileTool, args); err != nil {
		b.Fatal(err)
	}
	shellArgs := json.RawMessage(`{"command":["true"]}`)
	readArgs := json.RawMessage(`{"file_path":"kib.txt"}`)
	echo := toolsEchoStream(b, ctx, e, s.Info().ContainerID)
	spawnEcho := toolsSpawnEchoStream(b, ctx, e, s.Info().ContainerID)
	if err := spawnEcho(); err != nil { // python3 has started
		b.Fatal(err)
	}
	spawnFloor := toolsSpawnFloor(b, ctx, s)
	var shellT, readT, echoT, spawnEchoT []time.Duration
	b.ResetTimer()
	// Each call follows the same kind of step as in earlier versions of
	// this loop (shell after the echo, read after a spawn); the floor with
	// a spawn goes between them.
	for range b.N {
		t0 := time.Now()
		if _, err := s.Call(ctx, tools.ShellExecuteTool, shellArgs); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := spawnEcho(); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := s.Call(ctx, tools.ReadFileTool, readArgs); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		if err := echo(); err != nil {
			b.Fatal(err)
		}
		shellT, spawnEchoT = append(shellT, t1.Sub(t0)), append(spawnEchoT, t2.Sub(t1))
		readT, echoT = append(readT, t3.Sub(t2)), append(echoT, time.Since(t3))
	}
	b.StopTimer()
	b.ReportMetric(toolsSidecarCPU(b, ctx, s, shellArgs, tools.ShellExecuteTool), "sidecar-cpu-µs/shell")
	b.ReportMetric(toolsSidecarCPU(b, ctx, s, readArgs, tools.ReadFileTool), "sidecar-cpu-µs/read1k")
	time.Sleep(time.Second) // let the sidecar go idle
	_, rss := toolsSidecarUsage(b, ctx, s)
	b.ReportMetric(float64(rss)/(1<<20), "sidecar-idle-rss-MiB")
	if rss > toolsMaxSidecarRSS {
		b.Errorf("sidecar resident memory %d KiB exceeds the %d KiB target", rss>>10, toolsMaxSidecarRSS>>10)
	}
	m := toolsRoundTrip{shell50: toolsPercentile(shellT, 50), read50: toolsPercentile(readT, 50)}
	b.ReportMetric(toolsMS(m.shell50), "shell-p50-ms")
	b.ReportMetric(toolsMS(toolsPercentile(shellT, 99)), "shell-p99-ms")
	b.ReportMetric(toolsMS(m.read50), "read1k-p50-ms")
	b.ReportMetric(toolsMS(toolsPercentile(readT, 99)), "read1k-p99-ms")
	b.ReportMetric(toolsMS(toolsPercentile(echoT, 50)), "stream-echo-p50-ms")
	b.ReportMetric(toolsMS(spawnFloor), "spawn-floor-p50-ms")
	b.ReportMetric(toolsMS(m.shell50-spawnFloor), "shell-over-spawn-floor-ms")
	m.spawnStream50 = toolsPercentile(spawnEchoT, 50)
	b.ReportMetric(toolsMS(m.spawnStream50), "stream-spawn-p50-ms")
	b.ReportMetric(toolsMS(m.shell50-m.spawnStream50), "shell-over-stream-spawn-ms")
	pinned50, unpinned50 := toolsShellUnpinned(b, ctx, e, s, shellArgs)
	b.ReportMetric(toolsMS(unpinned50), "shell-unpinned-p50-ms")
	b.ReportMetric(float64(unpinned50)/float64(pinned50), "x-unpinned/pinned")
	b.ReportMetric(toolsMS(toolsShellInLargeWorkspace(b, ctx, s, shellArgs)), "shell-20k-files-p50-ms")
	return m
}

// toolsShellUnpinned times shell_execute ["true"] in s (placed by
// tools.cpuset = auto) and in a session with tools.cpuset = none, calls
// alternating between the two, and returns both p50s. On a host with more
// CPUs than the sessions' limit, s is pinned to one CPU.
func toolsShellUnpinned(b *testing.B, ctx context.Context, e engineUnderTest, s sandbox.Session, shellArgs json.RawMessage) (pinned, unpinned time.Duration) {
	b.Helper()
	free, _ := toolSession(b, ctx, e, func(c *config.Config) { c.Tools.CPUSet = "none" }, nil)
	var pinnedT, freeT []time.Duration
	for i := range 101 {
		for _, t := range []struct {
			s   sandbox.Session
			out *[]time.Duration
		}{{s, &pinnedT}, {free, &freeT}} {
			t0 := time.Now()
			if _, err := t.s.Call(ctx, tools.ShellExecuteTool, shellArgs); err != nil {
				b.Fatal(err)
			}
			if i > 0 { // the first call starts the unpinned container
				*t.out = append(*t.out, time.Since(t0))
			}
		}
	}
	return toolsPercentile(pinnedT, 50), toolsPercentile(freeT, 50)
}

// toolsShellInLargeWorkspace fills the session's workspace with 20,000
// files in 200 directories and times shell_execute ["true"] in it: what
// changed_files costs grows with the workspace only where the tree is
// walked around every command.
func toolsShellInLargeWorkspace(b *testing.B, ctx context.Context, s sandbox.Session, shellArgs json.RawMessage) time.Duration {
	b.Helper()
	const fill = "import os\nfor d in range(200):\n os.makedirs(f'big/{d}')\n for f in range(100): open(f'big/{d}/{f}', 'w').close()"
	res, err := sandbox.Invoke[tools.ShellResult](ctx, s, tools.ShellExecuteTool, tools.ShellParams{Command: []string{"python3", "-c", fill}})
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("fill the workspace: %v %+v", err, res)
	}
	var ts []time.Duration
	for range 20 {
		t0 := time.Now()
		if _, err := s.Call(ctx, tools.ShellExecuteTool, shellArgs); err != nil {
			b.Fatal(err)
		}
		ts = append(ts, time.Since(t0))
	}
	return toolsPercentile(ts, 50)
}

// toolsExecPhase times one Engine API exec and one CLI exec of true per
// call in a fresh session's container, and prints how many times slower
// each is than the same engine's sidecar round trips of this run.
func toolsExecPhase(b *testing.B, e engineUnderTest, sidecar toolsRoundTrip) {
	ctx := context.Background()
	s, _ := toolSession(b, ctx, e, nil, nil)
	if _, err := s.Call(ctx, tools.LsTool, json.RawMessage(`{"path":"."}`)); err != nil {
		b.Fatal(err)
	}
	id := s.Info().ContainerID
	cli := toolsEngineCLI(e)
	var apiT, cliT []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if err := toolsAPIExec(ctx, e, id, "true"); err != nil {
			b.Fatal(err)
		}
		apiT = append(apiT, time.Since(t0))
	}
	for range b.N {
		t0 := time.Now()
		if out, err := exec.Command(cli[0], append(cli[1:], "exec", id, "true")...).CombinedOutput(); err != nil {
			b.Fatalf("%s exec: %v\n%s", cli[0], err, out)
		}
		cliT = append(cliT, time.Since(t0))
	}
	b.StopTimer()
	api50, cli50 := toolsPercentile(apiT, 50), toolsPercentile(cliT, 50)
	b.ReportMetric(toolsMS(api50), "api-exec-p50-ms")
	b.ReportMetric(toolsMS(cli50), "cli-exec-p50-ms")
	if sidecar.shell50 == 0 {
		b.Logf("the %s sidecar phase did not run (filtered out?): no ratios", e.Name)
		return
	}
	b.ReportMetric(float64(api50)/float64(sidecar.shell50), "x-api-exec/shell")
	b.ReportMetric(float64(api50)/float64(sidecar.read50), "x-api-exec/read1k")
	b.ReportMetric(float64(cli50)/float64(sidecar.shell50), "x-cli-exec/shell")
	// The most any server spawning per request over an exec stream could show here.
	b.ReportMetric(float64(api50)/float64(sidecar.spawnStream50), "x-api-exec/stream-spawn")
}

// BenchmarkToolsFirstResult measures a new session's first result against
// `<engine> run --rm IMAGE true` with the same network and user.
func BenchmarkToolsFirstResult(b *testing.B) {
	for _, e := range suite.engines {
		b.Run(e.Name, func(b *testing.B) {
			ctx := context.Background()
			cli := toolsEngineCLI(e)
			var sessT, runT []time.Duration
			for range b.N {
				s, _ := toolSession(b, ctx, e, nil, nil)
				t0 := time.Now()
				if _, err := s.Call(ctx, tools.ShellExecuteTool, json.RawMessage(`{"command":["true"]}`)); err != nil {
					b.Fatal(err)
				}
				sessT = append(sessT, time.Since(t0))
				s.Close(ctx)
				t1 := time.Now()
				if out, err := exec.Command(cli[0], append(cli[1:], "run", "--rm", "--network", "none", "--user", "65534:65534", toolsImage, "true")...).CombinedOutput(); err != nil {
					b.Fatalf("%s run: %v\n%s", cli[0], err, out)
				}
				runT = append(runT, time.Since(t1))
			}
			b.ReportMetric(toolsMS(toolsPercentile(sessT, 50)), "session-first-p50-ms")
			b.ReportMetric(toolsMS(toolsPercentile(runT, 50)), "run-rm-p50-ms")
			b.ReportMetric(float64(toolsPercentile(sessT, 50))/float64(toolsPercentile(runT, 50)), "x-session/run-rm")
		})
	}
}
