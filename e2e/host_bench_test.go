//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/acp"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/hostflow"
	"github.com/podbot/podbot/launchplan"
)

// benchPayload is what one benchmark iteration sends through cat: 1 KiB
// ACP notifications (forwarded as they are by the policy in both directions).
func benchPayload(total int) []byte {
	pad := bytes.Repeat([]byte("x"), 1024-len(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","pad":"`)-len(`"}}`+"\n"))
	frame := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","pad":"` + string(pad) + `"}}` + "\n")
	return bytes.Repeat(frame, total/len(frame))
}

// flowMeter counts the bytes written to it and when the first and the last
// arrived, so throughput excludes the exec's start and exit.
type flowMeter struct {
	mu          sync.Mutex
	n           int
	first, last time.Time
}

func (m *flowMeter) Write(p []byte) (int, error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == 0 {
		m.first = now
	}
	m.n += len(p)
	m.last = now
	return len(p), nil
}

func (m *flowMeter) elapsed() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last.Sub(m.first)
}

// BenchmarkHostBridgeThroughput compares, in the same run and the same
// container, the bytes per second of `cat` behind podbot's bridge with the
// ACP policy on against a raw protocol-mode exec of `cat`. The ratio
// (bridge/raw) is the metric to watch; the target is at least 0.9. The
// Codex pass-through (passthrough/raw) measures hostflow's own plumbing, so
// the difference between the two ratios is the ACP policy's cost.
//
// All three send the same payload through the same in-process client (a
// bytes.Reader in, a byte counter out), so the client's own CPU is the same
// each way. Each iteration runs the three in a rotated order, so none always
// follows the others' exits; besides the ratios of the total rates, the
// median of the per-iteration ratios (-median) is reported, which a burst
// of load from other processes on the machine moves less. The process's
// own CPU time per MiB moved (each MiB goes in and comes back out; the
// exec's start and end included) is reported for each (-cpu-ms/MiB): on a
// machine whose cores are busy the bridge's extra CPU is what costs
// throughput, and it moves less with the load than wall time does.
//
// Each transfer is 64 MiB each way, about a quarter of a second at the
// engines' rates here. With 16 MiB (about 60 ms), runs of one build on
// the quiet machine ranged 0.72-1.12 on Docker; a scheduling delay or the
// first and last chunks' timing weighed too much in so short a transfer.
func BenchmarkHostBridgeThroughput(b *testing.B) {
	const total = 64 << 20
	payload := benchPayload(total)
	for _, e := range suite.engines {
		b.Run(e.Name, func(b *testing.B) {
			ctx := context.Background()
			ep, err := engine.ParseEndpoint(e.Endpoint)
			if err != nil {
				b.Fatal(err)
			}
			conn, err := engine.Connect(ctx, ep)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			cfg := config.Default()
			cfg.Image = sandboxImage
			cfg.Creds.CopyClaude, cfg.Creds.CopyCodex = false, false
			// cat needs no network; the allowlist default would need the
			// sidecar's egress proxy, which is not what is measured here.
			cfg.Network.Mode = config.NetworkNone
			cfg.Agent = config.Agent{Kind: config.KindCustom, Mode: config.ModeACP, Command: "cat"}
			sb, err := podbot.Launch(ctx, conn, podbot.LaunchOptions{Config: cfg, Intent: launchplan.IntentHosting,
				Name: fmt.Sprintf("pbt-%s-%s-bench-host", suite.runID, e.Name)})
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				cctx, cancel := engine.CleanupContext(ctx)
				defer cancel()
				_ = sb.Close(cctx, true)
			}()

			// serve runs cat behind the bridge with policy p and returns the
			// steady-state transfer time.
			serve := func(p acp.Policy) time.Duration {
				m := &flowMeter{}
				code, err := hostflow.Serve(ctx, conn, hostflow.Options{ContainerID: sb.ID, Cmd: []string{"cat"},
					Policy: p, Stdin: bytes.NewReader(payload), Stdout: m, Stderr: io.Discard})
				if err != nil || code != 0 || m.n != len(payload) {
					b.Fatalf("bridged cat (%s policy): exit %d, %v, %d of %d bytes", p.Mode, code, err, m.n, len(payload))
				}
				return m.elapsed()
			}
			raw := func() time.Duration {
				m := &flowMeter{}
				code, err := conn.Exec(ctx, sb.ID, engine.ExecOptions{Cmd: []string{"cat"},
					Stdin: bytes.NewReader(payload), Stdout: m, Stderr: io.Discard})
				if err != nil || code != 0 || m.n != len(payload) {
					b.Fatalf("raw cat: exit %d, %v, %d of %d bytes", code, err, m.n, len(payload))
				}
				return m.elapsed()
			}
			var rawTime, bridgeTime, plumbingTime time.Duration
			var rawCPU, bridgeCPU, plumbingCPU time.Duration
			timed := func(cpu *time.Duration, run func()) {
				c0 := processCPU()
				run()
				*cpu += processCPU() - c0
			}
			var bridgeRatios, plumbingRatios []float64
			b.SetBytes(int64(2 * len(payload)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var r, br, pl time.Duration
				runs := []func(){
					func() { timed(&rawCPU, func() { r = raw() }) },
					func() { timed(&bridgeCPU, func() { br = serve(acp.Policy{Mode: acp.ModeACP}) }) },
					// Codex pass-through: hostflow's plumbing without the policy's work.
					func() { timed(&plumbingCPU, func() { pl = serve(acp.Policy{Mode: acp.ModeCodexAppServer}) }) },
				}
				for k := range runs {
					runs[(i+k)%len(runs)]()
				}
				rawTime, bridgeTime, plumbingTime = rawTime+r, bridgeTime+br, plumbingTime+pl
				bridgeRatios = append(bridgeRatios, r.Seconds()/br.Seconds())
				plumbingRatios = append(plumbingRatios, r.Seconds()/pl.Seconds())
			}
			b.StopTimer()
			mb := float64(len(payload)) * float64(b.N) / (1 << 20)
			rawRate, bridgeRate, plumbingRate := mb/rawTime.Seconds(), mb/bridgeTime.Seconds(), mb/plumbingTime.Seconds()
			b.ReportMetric(rawRate, "raw-MiB/s")
			b.ReportMetric(bridgeRate, "bridge-MiB/s")
			b.ReportMetric(plumbingRate, "passthrough-MiB/s")
			b.ReportMetric(bridgeRate/rawRate, "bridge/raw")
			b.ReportMetric(plumbingRate/rawRate, "passthrough/raw")
			b.ReportMetric(median(bridgeRatios), "bridge/raw-median")
			b.ReportMetric(median(plumbingRatios), "passthrough/raw-median")
			perMiB := func(d time.Duration) float64 { return d.Seconds() * 1000 / mb }
			b.ReportMetric(perMiB(rawCPU), "raw-cpu-ms/MiB")
			b.ReportMetric(perMiB(bridgeCPU), "bridge-cpu-ms/MiB")
			b.ReportMetric(perMiB(plumbingCPU), "passthrough-cpu-ms/MiB")
		})
	}
}

// processCPU is the CPU time this process has used so far, user and
// system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// median returns the middle of xs (the mean of the two middle values for an
// even count); xs is sorted in place.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
