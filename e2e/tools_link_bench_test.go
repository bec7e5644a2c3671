//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/sandbox"
	"github.com/podbot/podbot/tools"
)

// linkColdRuns is how many new sessions each link mode starts in
// BenchmarkToolsLinkConnect's cold phase.
const linkColdRuns = 8

// BenchmarkToolsLinkConnect measures what a host pays to reach the sidecar
// of an already running sandbox and get its first read_file result, over
// the link socket and over a new exec, alternating the two in one run
// (each iteration detaches both sessions and times one read_file on each):
// what a claim from a warm pool pays for its connection. The cold phase
// times a new session's first call (container create and start included)
// the same way.
//
//	go test -tags e2e -run XXX -bench BenchmarkToolsLinkConnect -benchtime 50x ./e2e/
func BenchmarkToolsLinkConnect(b *testing.B) {
	for _, e := range suite.engines {
		b.Run(e.Name, func(b *testing.B) {
			ctx := context.Background()
			sock, _ := linkedSession(b, ctx, e, sandbox.SidecarLinkAuto)
			viaExec, _ := linkedSession(b, ctx, e, sandbox.SidecarLinkExec)
			read := json.RawMessage(`{"file_path":"f.txt"}`)
			for _, s := range []*sandbox.Container{sock, viaExec} {
				if _, err := s.Call(ctx, tools.WriteFileTool, json.RawMessage(`{"file_path":"f.txt","content":"hello\n"}`)); err != nil {
					b.Fatal(err)
				}
			}
			first := func(s *sandbox.Container) time.Duration {
				s.Detach()
				t0 := time.Now()
				if _, err := s.Call(ctx, tools.ReadFileTool, read); err != nil {
					b.Fatal(err)
				}
				return time.Since(t0)
			}
			var sockT, execT []time.Duration
			b.ResetTimer()
			for range b.N {
				sockT = append(sockT, first(sock))
				execT = append(execT, first(viaExec))
			}
			b.StopTimer()
			if sock.Info().Link != sandbox.LinkSocket || viaExec.Info().Link != sandbox.LinkExec {
				b.Fatalf("links %q and %q", sock.Info().Link, viaExec.Info().Link)
			}
			var coldSock, coldExec []time.Duration
			for range linkColdRuns {
				for _, link := range []string{sandbox.SidecarLinkAuto, sandbox.SidecarLinkExec} {
					s, _ := toolSessionWith(b, ctx, e, nil, func(o *podbot.ToolSessionOptions) { o.SidecarLink = link })
					t0 := time.Now()
					if _, err := s.Call(ctx, tools.LsTool, json.RawMessage(`{"path":"."}`)); err != nil {
						b.Fatal(err)
					}
					d := time.Since(t0)
					if link == sandbox.SidecarLinkAuto {
						coldSock = append(coldSock, d)
					} else {
						coldExec = append(coldExec, d)
					}
					cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					s.Close(cctx)
					cancel()
				}
			}
			p := func(ds []time.Duration, q int) float64 { return toolsMS(toolsPercentile(ds, q)) }
			b.ReportMetric(p(sockT, 50), "socket-connect+read-p50-ms")
			b.ReportMetric(p(sockT, 99), "socket-connect+read-p99-ms")
			b.ReportMetric(p(execT, 50), "exec-connect+read-p50-ms")
			b.ReportMetric(p(execT, 99), "exec-connect+read-p99-ms")
			b.ReportMetric(p(execT, 50)/p(sockT, 50), "x-exec/socket-p50")
			b.ReportMetric(p(coldSock, 50), "cold-socket-first-p50-ms")
			b.ReportMetric(p(coldExec, 50), "cold-exec-first-p50-ms")
			b.ReportMetric(p(coldExec, 50)/p(coldSock, 50), "x-cold-exec/socket-p50")
			b.ReportMetric(0, "ns/op")
		})
	}
}
