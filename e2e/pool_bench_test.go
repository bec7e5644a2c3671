//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/pool"
	"github.com/podbot/podbot/sandbox"
	"github.com/podbot/podbot/tools"
)

// BenchmarkPoolClaim measures, per engine in one run, the time from asking
// for a tool session to the first read_file result:
//
//   - warm: claimed from a pool of 8 kept full by an in-process refiller;
//   - cold: a new session (container created on the first call), the
//     baseline, alternating with the warm claims;
//   - row: 100 claims in a row at pool size 8 with the refiller running,
//     each session closed before the next claim (a claim that finds the
//     pool empty starts cold and is counted in row-cold).
//
// Both paths hydrate the same one-file workspace and read that file.
func BenchmarkPoolClaim(b *testing.B) {
	for _, e := range suite.engines {
		b.Run(e.Name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
			defer cancel()
			conn := poolConn(b, ctx, e)
			src := b.TempDir()
			if err := os.WriteFile(filepath.Join(src, "notes.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			name := "bp-" + suite.runID[len(suite.runID)-6:]
			bk, spec, cfg, root := libraryPool(b, ctx, e, conn, name, 8, nil)
			cfg.Tools.AllowedHostRoots = []string{src}
			st, err := pool.OpenStore(filepath.Join(b.TempDir(), "pools"))
			if err != nil {
				b.Fatal(err)
			}
			rctx, stopRefill := context.WithCancel(ctx)
			refilled := make(chan struct{})
			go func() {
				defer close(refilled)
				r := &pool.Refiller{Backend: bk, Store: st}
				r.Serve(rctx, func() ([]pool.Spec, error) { return []pool.Spec{spec}, nil }, 100*time.Millisecond)
			}()
			defer func() { stopRefill(); <-refilled }()
			waitLibReady := func(n int) {
				for t0 := time.Now(); time.Since(t0) < 2*time.Minute; time.Sleep(100 * time.Millisecond) {
					ms, _ := bk.Members(ctx, name)
					ready := 0
					for _, m := range ms {
						if m.State == pool.StateReady {
							ready++
						}
					}
					if ready >= n {
						return
					}
				}
				b.Fatalf("pool %s not refilled to %d", name, n)
			}
			file := filepath.Base(src) + "/notes.txt"
			// once opens a session (from the pool when p is set), reads the
			// file, and returns the time to the result and the claim's outcome.
			once := func(p *pool.Spec) (time.Duration, string) {
				outcome := "cold"
				t0 := time.Now()
				s, err := podbot.NewToolSession(ctx, conn, podbot.ToolSessionOptions{
					Config: cfg, SidecarPath: filepath.Join(suite.bin, "podbot-sidecar"), WorkspaceRoot: root,
					Mounts: []podbot.ToolHostMount{{HostPath: src}}, Pool: p,
					OnClaim: func(c podbot.ClaimReport) { outcome = c.Outcome },
				})
				if err != nil {
					b.Fatal(err)
				}
				rf, err := sandbox.Invoke[tools.ReadFileResult](ctx, s, tools.ReadFileTool, tools.ReadFileParams{FilePath: file})
				d := time.Since(t0)
				if err != nil || rf.TotalLines != 2 {
					b.Fatalf("read_file: %+v %v", rf, err)
				}
				cctx, ccancel := engine.CleanupContext(ctx)
				s.Close(cctx)
				ccancel()
				return d, outcome
			}
			for range b.N {
				waitLibReady(8)
				const rounds = 15
				var warm, cold []time.Duration
				for range rounds {
					d, o := once(&spec)
					if o != podbot.ClaimWarm {
						b.Fatalf("claim from a full pool went %s", o)
					}
					warm = append(warm, d)
					d, _ = once(nil)
					cold = append(cold, d)
					waitLibReady(8)
				}
				var row []time.Duration
				rowCold := 0
				rowStart := time.Now()
				for range 100 {
					d, o := once(&spec)
					if o == podbot.ClaimCold {
						rowCold++
					}
					row = append(row, d)
				}
				rowTook := time.Since(rowStart)
				w50, c50 := toolsPercentile(warm, 50), toolsPercentile(cold, 50)
				b.ReportMetric(toolsMS(w50), "warm-p50-ms")
				b.ReportMetric(toolsMS(toolsPercentile(warm, 99)), "warm-p99-ms")
				b.ReportMetric(toolsMS(c50), "cold-p50-ms")
				b.ReportMetric(toolsMS(toolsPercentile(cold, 99)), "cold-p99-ms")
				b.ReportMetric(float64(c50)/float64(w50), "cold/warm-p50")
				b.ReportMetric(toolsMS(toolsPercentile(row, 50)), "row-p50-ms")
				b.ReportMetric(toolsMS(toolsPercentile(row, 99)), "row-p99-ms")
				b.ReportMetric(float64(rowCold), "row-cold")
				b.ReportMetric(rowTook.Seconds(), "row-total-s")
			}
		})
	}
}
