//go:build e2e && kubernetes

package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/sandbox"
	"github.com/podbot/podbot/tools"
)

// k8sBenchEngine is the engine the Kubernetes tool benchmarks compare
// with: the first one named (Podman under make).
func k8sBenchEngine(b *testing.B) engineUnderTest {
	b.Helper()
	if len(suite.engines) == 0 {
		b.Fatal("no engine named")
	}
	return suite.engines[0]
}

// BenchmarkK8sToolsFirstCall times a new tool session's first call, the
// sandbox made on the way (a Pod with the sidecar streamed in, on the
// cluster; a container with the sidecar mounted, on the engine), each
// iteration one session on each backend in turn. It reports both p50s and
// their ratio.
func BenchmarkK8sToolsFirstCall(b *testing.B) {
	c := k8sCluster(b)
	e := k8sBenchEngine(b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	ns := c.k8sNamespace(b, ctx)
	args := json.RawMessage(`{"command":["true"]}`)
	first := func(s podbot.ToolSession) time.Duration {
		t0 := time.Now()
		if _, err := s.Call(ctx, tools.ShellExecuteTool, args); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		if err := s.Close(cctx); err != nil {
			b.Fatal(err)
		}
		return d
	}
	var kd, ed, made []time.Duration
	// EventCreated's duration is the Pod's: created, the sidecar streamed
	// in and checked, Running. The rest is the serve exec and MCP.
	onEvent := func(ev sandbox.Event) {
		if ev.Kind == sandbox.EventCreated {
			made = append(made, ev.Duration)
		}
	}
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		ks := c.k8sToolSession(b, ctx, ns, onEvent)
		open := time.Since(t0)
		kd = append(kd, open+first(ks))
		t0 = time.Now()
		es, _ := toolSession(b, ctx, e, nil, nil)
		open = time.Since(t0)
		ed = append(ed, open+first(es))
	}
	b.StopTimer()
	k, en := toolsPercentile(kd, 50), toolsPercentile(ed, 50)
	b.ReportMetric(toolsMS(k), "k8s-first-p50-ms")
	b.ReportMetric(toolsMS(toolsPercentile(made, 50)), "k8s-pod-ready-p50-ms")
	b.ReportMetric(toolsMS(en), e.Name+"-first-p50-ms")
	b.ReportMetric(float64(k)/float64(en), "x-k8s/"+e.Name)
}

// BenchmarkK8sToolsRoundTrip times one tool call over a running session's
// stream: read_file of a 1 KiB file and shell_execute ["true"], on the
// cluster (pods/exec through the API server and the kubelet) and on the
// engine, calls alternating between the two. It reports the p50s, the p99s
// and the ratio of the p50s.
func BenchmarkK8sToolsRoundTrip(b *testing.B) {
	c := k8sCluster(b)
	e := k8sBenchEngine(b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	ks := c.k8sToolSession(b, ctx, c.k8sNamespace(b, ctx), nil)
	es, _ := toolSession(b, ctx, e, nil, nil)
	write, _ := json.Marshal(map[string]string{"file_path": "f.txt", "content": strings.Repeat("0123456789abcdef\n", 60)})
	for _, s := range []podbot.ToolSession{ks, es} {
		if _, err := s.Call(ctx, tools.WriteFileTool, write); err != nil {
			b.Fatal(err)
		}
	}
	for _, call := range []struct {
		name, tool string
		args       json.RawMessage
	}{
		{"read_file", tools.ReadFileTool, json.RawMessage(`{"file_path":"f.txt"}`)},
		{"shell_true", tools.ShellExecuteTool, json.RawMessage(`{"command":["true"]}`)},
	} {
		b.Run(call.name, func(b *testing.B) {
			var kd, ed []time.Duration
			for range b.N {
				for _, side := range []struct {
					s podbot.ToolSession
					d *[]time.Duration
				}{{ks, &kd}, {es, &ed}} {
					t0 := time.Now()
					if _, err := side.s.Call(ctx, call.tool, call.args); err != nil {
						b.Fatal(err)
					}
					*side.d = append(*side.d, time.Since(t0))
				}
			}
			k, en := toolsPercentile(kd, 50), toolsPercentile(ed, 50)
			b.ReportMetric(toolsMS(k), "k8s-p50-ms")
			b.ReportMetric(toolsMS(toolsPercentile(kd, 99)), "k8s-p99-ms")
			b.ReportMetric(toolsMS(en), e.Name+"-p50-ms")
			b.ReportMetric(toolsMS(toolsPercentile(ed, 99)), e.Name+"-p99-ms")
			b.ReportMetric(float64(k)/float64(en), "x-k8s/"+e.Name)
		})
	}
}
