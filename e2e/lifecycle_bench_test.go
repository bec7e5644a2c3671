//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
)

// benchConn connects podbot's library to engine e.
func benchConn(b *testing.B, e engineUnderTest) *engine.Conn {
	b.Helper()
	ep, err := engine.ParseEndpoint(e.Endpoint)
	if err != nil {
		b.Fatal(err)
	}
	conn, err := engine.Connect(context.Background(), ep)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return conn
}

// engineCLIArgs is the engine's own CLI and its endpoint flag.
func engineCLIArgs(e engineUnderTest) []string {
	if e.Name == "podman" {
		return []string{"podman", "--url", e.Endpoint}
	}
	return []string{"docker", "-H", e.Endpoint}
}

func runCLI(b *testing.B, argv ...string) time.Duration {
	b.Helper()
	start := time.Now()
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	took := time.Since(start)
	if err != nil {
		b.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return took
}

// reportRatio reports both sides per operation and how many times slower
// the CLI is than podbot (above 1: podbot is faster).
func reportRatio(b *testing.B, podbotTotal, cliTotal time.Duration, cli string) {
	n := float64(b.N)
	p := float64(podbotTotal.Microseconds()) / 1000 / n
	c := float64(cliTotal.Microseconds()) / 1000 / n
	b.ReportMetric(p, "podbot-ms/op")
	b.ReportMetric(c, cli+"-ms/op")
	b.ReportMetric(c/p, cli+"/podbot")
	b.Logf("%s: podbot %.1f ms, %s %.1f ms, ratio %s/podbot = %.2f", b.Name(), p, cli, c, cli, c/p)
}

// BenchmarkExecTrue measures one exec of `true` through podbot's library
// against the engine's own CLI (`podman --url ... exec`, `docker -H ... exec`)
// in the same run.
func BenchmarkExecTrue(b *testing.B) {
	for _, e := range suite.engines {
		b.Run(e.Name, func(b *testing.B) {
			ctx := context.Background()
			conn := benchConn(b, e)
			name := fmt.Sprintf("pbt-%s-%s-bench-exec", suite.runID, e.Name)
			res, err := podbot.Create(ctx, conn, podbot.CreateOptions{
				Config: config.Config{Image: "localhost/podbot-sandbox:latest"}, Name: name,
				SidecarPath: filepath.Join(suite.bin, "podbot-sidecar"),
			})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = conn.Remove(context.Background(), res.ID, true) })
			cli := append(engineCLIArgs(e), "exec", name, "true")
			var podbotTotal, cliTotal time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				code, err := podbot.Exec(ctx, conn, name, podbot.ExecOptions{Cmd: []string{"true"}})
				podbotTotal += time.Since(start)
				if err != nil || code != 0 {
					b.Fatalf("podbot exec true: %d %v", code, err)
				}
				cliTotal += runCLI(b, cli...)
			}
			b.StopTimer()
			reportRatio(b, podbotTotal, cliTotal, e.Name)
		})
	}
}

// BenchmarkPs50 measures `podbot ps -a` against the engine CLI's `ps -a`
// filtered to podbot's label, with 50 podbot containers present.
func BenchmarkPs50(b *testing.B) {
	for _, e := range suite.engines {
		b.Run(e.Name, func(b *testing.B) {
			ctx := context.Background()
			for i := 0; i < 50; i++ {
				name := fmt.Sprintf("pbt-%s-%s-bench-ps%02d", suite.runID, e.Name, i)
				_, err := e.API.ContainerCreate(ctx, &container.Config{
					Image: "localhost/podbot-sandbox:latest", Cmd: []string{"true"},
					Labels: map[string]string{"podbot.managed": "true", "podbot.session": suite.runID + "-bench"},
				}, nil, nil, nil, name)
				b.Cleanup(func() { _ = e.API.ContainerRemove(context.Background(), name, container.RemoveOptions{Force: true}) })
				if err != nil {
					b.Fatalf("create %s: %v", name, err)
				}
			}
			pb := []string{filepath.Join(suite.bin, "podbot"), "--engine-socket", e.Endpoint, "ps", "-a"}
			cli := append(engineCLIArgs(e), "ps", "-a", "--filter", "label=podbot.managed=true")
			var podbotTotal, cliTotal time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				podbotTotal += runCLI(b, pb...)
				cliTotal += runCLI(b, cli...)
			}
			b.StopTimer()
			reportRatio(b, podbotTotal, cliTotal, e.Name)
		})
	}
}
