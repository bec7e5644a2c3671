package hostflow

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/podbot/podbot/acp"
	"github.com/podbot/podbot/engine"
)

// catExecer is an in-memory `cat`: what Serve costs without an engine.
type catExecer struct{}

func (catExecer) Exec(_ context.Context, _ string, opts engine.ExecOptions) (int, error) {
	_, err := io.Copy(opts.Stdout, opts.Stdin)
	return 0, err
}

// BenchmarkServeInMemory measures Serve with the ACP policy around an
// in-memory cat against copying the same bytes straight through it, both
// in this run. 1 KiB ACP notifications; the ratio is serve/copy.
func BenchmarkServeInMemory(b *testing.B) {
	frame := append([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","pad":"`),
		bytes.Repeat([]byte("x"), 940)...)
	frame = append(frame, "\"}}\n"...)
	payload := bytes.Repeat(frame, (4<<20)/len(frame))
	var copyTime, serveTime time.Duration
	b.SetBytes(int64(len(payload)))
	for i := 0; i < b.N; i++ {
		start := time.Now()
		var direct bytes.Buffer
		if _, err := (catExecer{}).Exec(context.Background(), "", engine.ExecOptions{Stdin: bytes.NewReader(payload), Stdout: &direct}); err != nil {
			b.Fatal(err)
		}
		copyTime += time.Since(start)

		start = time.Now()
		var out countWriter
		code, err := Serve(context.Background(), catExecer{}, Options{ContainerID: "bench", Cmd: []string{"cat"},
			Policy: acp.Policy{Mode: acp.ModeACP}, Stdin: bytes.NewReader(payload), Stdout: &out, Stderr: io.Discard})
		if err != nil || code != 0 || int(out) != len(payload) {
			b.Fatalf("Serve = %d, %v; %d of %d bytes", code, err, out, len(payload))
		}
		serveTime += time.Since(start)
	}
	mb := float64(len(payload)) * float64(b.N) / (1 << 20)
	b.ReportMetric(mb/serveTime.Seconds(), "serve-MiB/s")
	b.ReportMetric(mb/copyTime.Seconds(), "copy-MiB/s")
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }
