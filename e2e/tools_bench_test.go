//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

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

// BenchmarkToolsRoundTrip measures one tool call through the sidecar
// stream against one Engine API exec per call and one CLI exec per call,
// all in the same run on the same container.
func BenchmarkToolsRoundTrip(b *testing.B) {
	for _, e := range suite.engines {
		b.Run(e.Name, func(b *testing.B) {
			ctx := context.Background()
			s, _ := toolSession(b, ctx, e, nil, nil)
			content := strings.Repeat("0123456789abcde\n", 64) // 1 KiB
			args, _ := json.Marshal(map[string]string{"file_path": "kib.txt", "content": content})
			if _, err := s.Call(ctx, tools.WriteFileTool, args); err != nil {
				b.Fatal(err)
			}
			id := s.Info().ContainerID
			cli := toolsEngineCLI(e)
			shellArgs := json.RawMessage(`{"command":["true"]}`)
			readArgs := json.RawMessage(`{"file_path":"kib.txt"}`)
			var shellT, readT, apiT, cliT []time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if _, err := s.Call(ctx, tools.ShellExecuteTool, shellArgs); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := s.Call(ctx, tools.ReadFileTool, readArgs); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				if err := toolsAPIExec(ctx, e, id, "true"); err != nil {
					b.Fatal(err)
				}
				t3 := time.Now()
				if out, err := exec.Command(cli[0], append(cli[1:], "exec", id, "true")...).CombinedOutput(); err != nil {
					b.Fatalf("%s exec: %v\n%s", cli[0], err, out)
				}
				t4 := time.Now()
				shellT, readT = append(shellT, t1.Sub(t0)), append(readT, t2.Sub(t1))
				apiT, cliT = append(apiT, t3.Sub(t2)), append(cliT, t4.Sub(t3))
			}
			b.StopTimer()
			b.ReportMetric(toolsMS(toolsPercentile(shellT, 50)), "shell-p50-ms")
			b.ReportMetric(toolsMS(toolsPercentile(shellT, 99)), "shell-p99-ms")
			b.ReportMetric(toolsMS(toolsPercentile(readT, 50)), "read1k-p50-ms")
			b.ReportMetric(toolsMS(toolsPercentile(readT, 99)), "read1k-p99-ms")
			b.ReportMetric(toolsMS(toolsPercentile(apiT, 50)), "api-exec-p50-ms")
			b.ReportMetric(toolsMS(toolsPercentile(cliT, 50)), "cli-exec-p50-ms")
			b.ReportMetric(float64(toolsPercentile(apiT, 50))/float64(toolsPercentile(shellT, 50)), "x-api-exec/shell")
			b.ReportMetric(float64(toolsPercentile(cliT, 50))/float64(toolsPercentile(shellT, 50)), "x-cli-exec/shell")
		})
	}
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
