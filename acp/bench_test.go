package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// frameOf pads a message to size bytes (including its "\n").
func frameOf(size int, format string) []byte {
	base := fmt.Sprintf(format, "")
	pad := max(0, size-len(base)-1)
	return []byte(fmt.Sprintf(format, strings.Repeat("x", pad)) + "\n")
}

// BenchmarkPolicyFrame measures the policy's added latency for one 1 KiB
// frame: ns/op is the mean; p50-ns and p99-ns come from timing each call.
func BenchmarkPolicyFrame(b *testing.B) {
	cases := []struct {
		name string
		from peer
		msg  []byte
	}{
		{"agent-notification-forwarded", agent, frameOf(1024, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%s"}}}}`)},
		{"agent-request-refused", agent, frameOf(1024, `{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/%s"}}`)},
		{"client-initialize-masked", client, frameOf(1024, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true},"clientInfo":{"name":"%s"}}}`)},
		{"client-response-forwarded", client, frameOf(1024, `{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"%s"}}}`)},
		{"agent-response-forwarded", agent, frameOf(1024, `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn","_meta":{"x":"%s"}}}`)},
		{"agent-initialize-response-masked", agent, frameOf(1024, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true},"authMethods":[{"id":"a","name":"A"},{"id":"t","name":"T","type":"terminal","args":["--login"]}],"agentInfo":{"name":"%s"}}}`)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			f := newFilter(Policy{})
			ctx := context.Background()
			// The client has initialized: its id (0) is tracked, as in any
			// real session.
			f.frame(ctx, client, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`+"\n"))
			samples := make([]time.Duration, 0, min(b.N, 1<<20))
			b.SetBytes(int64(len(c.msg)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				v := f.frame(ctx, c.from, c.msg)
				if len(samples) < cap(samples) {
					samples = append(samples, time.Since(start))
				}
				if v.forward == nil && v.reply == nil {
					b.Fatal("frame vanished")
				}
			}
			b.StopTimer()
			slices.Sort(samples)
			if len(samples) > 0 {
				b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds()), "p50-ns")
				b.ReportMetric(float64(samples[len(samples)*99/100].Nanoseconds()), "p99-ns")
			}
		})
	}
}

// sessionUpdate is an agent_message_chunk notification; %s is its text.
const sessionUpdate = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%s"}}}}`

// BenchmarkBridgeThroughput moves about 8 MiB of agent output through
// Bridge with the ACP policy and through io.Copy, in the same run, and
// reports the ratio (bridge / copy). The cases vary the frame size: many
// small frames, the common 1 KiB, 64 KiB text chunks and 1 MiB frames.
func BenchmarkBridgeThroughput(b *testing.B) {
	for _, c := range []struct {
		name string
		size int
	}{
		{"small-256B", 256},
		{"1KiB", 1 << 10},
		{"64KiB", 64 << 10},
		{"1MiB", 1 << 20},
	} {
		b.Run(c.name, func(b *testing.B) {
			frame := frameOf(c.size, sessionUpdate)
			payload := bytes.Repeat(frame, max(1, (8<<20)/len(frame)))
			benchBridge(b, payload)
		})
	}
}

// BenchmarkBridgeThroughputEscaped is the 64 KiB case with text that is
// mostly escapes and multi-byte UTF-8, the slow paths of a JSON scanner.
func BenchmarkBridgeThroughputEscaped(b *testing.B) {
	text := strings.Repeat(`line \"quoted\" \u00e9t\u00e9 ça — ok\n`, (64<<10)/48)
	frame := []byte(fmt.Sprintf(sessionUpdate, text) + "\n")
	benchBridge(b, bytes.Repeat(frame, (8<<20)/len(frame)))
}

// benchBridge times payload through io.Copy and through Bridge with the
// ACP policy, alternating in the same run.
func benchBridge(b *testing.B, payload []byte) {
	var bridgeTime, copyTime time.Duration
	ctx := context.Background()
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := io.Copy(io.Discard, onlyReader{bytes.NewReader(payload)}); err != nil {
			b.Fatal(err)
		}
		copyTime += time.Since(start)

		start = time.Now()
		err := Bridge(ctx, Policy{}, bytes.NewReader(nil), io.Discard, onlyReader{bytes.NewReader(payload)}, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		bridgeTime += time.Since(start)
	}
	b.StopTimer()
	mb := float64(len(payload)) * float64(b.N) / (1 << 20)
	b.ReportMetric(mb/bridgeTime.Seconds(), "bridge-MiB/s")
	b.ReportMetric(mb/copyTime.Seconds(), "copy-MiB/s")
	b.ReportMetric(copyTime.Seconds()/bridgeTime.Seconds(), "bridge/copy")
}

// onlyReader hides WriterTo so io.Copy really copies through a buffer.
type onlyReader struct{ io.Reader }

// BenchmarkScanObject compares the one-pass scanner with the checks it
// replaces (utf8.Valid then json.Valid) on 64 KiB session/update frames of
// plain ASCII, of escape-heavy text and of CJK text.
func BenchmarkScanObject(b *testing.B) {
	texts := []struct{ name, unit string }{
		{"ascii", "x"},
		{"escaped", `line \"quoted\" \u00e9t\u00e9 ça — ok\n`},
		{"cjk", "日本語のテキスト"},
	}
	for _, tx := range texts {
		text := strings.Repeat(tx.unit, (64<<10)/len(tx.unit))
		frame := []byte(fmt.Sprintf(sessionUpdate, text))
		b.Run(tx.name+"/scanObject", func(b *testing.B) {
			var members []member
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if members, err = scanObject(frame, members, true); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tx.name+"/stdlib", func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if !utf8.Valid(frame) || !json.Valid(frame) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// BenchmarkStringScan walks the special bytes of one long JSON string, as
// the scanner does, with stringSpan and with the word-by-word nextSpecial
// alone (the previous scan), alternating in the same run, and reports the
// ratio (word/span: above 1 means stringSpan is faster).
func BenchmarkStringScan(b *testing.B) {
	for _, tx := range []struct{ name, unit string }{
		{"ascii-1KiB", strings.Repeat("x", 1000)},
		{"ascii-64KiB", strings.Repeat("x", 64<<10)},
		{"escaped", strings.Repeat(`line \"quoted\" \u00e9t\u00e9 ça — ok\n`, (64<<10)/48)},
		{"cjk", strings.Repeat("日本語のテキスト", (64<<10)/24)},
	} {
		b.Run(tx.name, func(b *testing.B) {
			data := []byte(tx.unit + `"`)
			walk := func(next func(int) int) int {
				specials := 0
				for i := 0; i < len(data); i = next(i) + 1 {
					specials++
				}
				return specials
			}
			var spanTime, wordTime time.Duration
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				start := time.Now()
				span := stringSpan{data: data}
				n1 := walk(span.next)
				spanTime += time.Since(start)
				start = time.Now()
				n2 := walk(func(i int) int { return nextSpecial(data, i) })
				wordTime += time.Since(start)
				if n1 != n2 {
					b.Fatalf("stringSpan found %d special bytes, nextSpecial %d", n1, n2)
				}
			}
			b.ReportMetric(wordTime.Seconds()/spanTime.Seconds(), "word/span")
		})
	}
}

// BenchmarkParseUpdate measures parseMessage on 1 KiB session/update
// notifications against the full path (parseMessageFull) on the same
// frames, alternating in batches in the same run. It reports the process's
// CPU time per frame of each (full-cpu-ns/frame, update-cpu-ns/frame),
// which the machine's load moves less than wall time, and their ratio
// (full/update: above 1 means the session/update path is cheaper). "pad"
// is the frame BenchmarkHostBridgeThroughput sends, "chunk" an
// agent_message_chunk as the SDKs write it.
func BenchmarkParseUpdate(b *testing.B) {
	const batch = 4096
	for _, c := range []struct {
		name  string
		frame []byte
	}{
		{"pad", frameOf(1024, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","pad":"%s"}}`)},
		{"chunk", frameOf(1024, sessionUpdate)},
	} {
		b.Run(c.name, func(b *testing.B) {
			content := c.frame[:len(c.frame)-1]
			var buf []member
			var fullCPU, updateCPU time.Duration
			run := func(parse func([]byte, []member) (message, error)) time.Duration {
				c0 := processCPU()
				for range batch {
					m, err := parse(content, buf)
					if err != nil || !m.hasMethod {
						b.Fatalf("%q: %v", content, err)
					}
					buf = m.members
				}
				return processCPU() - c0
			}
			if _, ok := parseUpdate(content, nil); !ok {
				b.Fatal("the frame does not take the session/update path")
			}
			b.SetBytes(int64(2 * batch * len(content)))
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					fullCPU += run(parseMessageFull)
					updateCPU += run(parseMessage)
				} else {
					updateCPU += run(parseMessage)
					fullCPU += run(parseMessageFull)
				}
			}
			frames := float64(b.N * batch)
			b.ReportMetric(float64(fullCPU.Nanoseconds())/frames, "full-cpu-ns/frame")
			b.ReportMetric(float64(updateCPU.Nanoseconds())/frames, "update-cpu-ns/frame")
			b.ReportMetric(fullCPU.Seconds()/updateCPU.Seconds(), "full/update")
		})
	}
}

// BenchmarkPumpUpdatePath moves 8 MiB of 1 KiB session/update
// notifications through one pump with the ACP policy, with the
// session/update path and without it (parseMessageFull), alternating in
// the same run. It reports the process's CPU time per MiB of each
// (update-cpu-ms/MiB, full-cpu-ms/MiB: what competes with the engine for
// the cores) and the ratios of CPU and of wall times (full/update-cpu,
// full/update-wall: above 1 means the session/update path is cheaper).
func BenchmarkPumpUpdatePath(b *testing.B) {
	for _, c := range []struct{ name, format string }{
		{"pad", `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","pad":"%s"}}`},
		{"chunk", sessionUpdate},
	} {
		b.Run(c.name, func(b *testing.B) {
			frame := frameOf(1024, c.format)
			payload := bytes.Repeat(frame, (8<<20)/len(frame))
			ctx := context.Background()
			run := func(parse func([]byte, []member) (message, error), wall, cpu *time.Duration) {
				f := newFilter(Policy{})
				f.parse = parse
				out := &countingWriter{}
				start, c0 := time.Now(), processCPU()
				err := pump(ctx, f, agent, onlyReader{bytes.NewReader(payload)}, &frameWriter{w: out}, &frameWriter{w: io.Discard}, 0)
				*wall += time.Since(start)
				*cpu += processCPU() - c0
				if err != nil || out.n != len(payload) {
					b.Fatalf("pump: %v, %d of %d bytes", err, out.n, len(payload))
				}
			}
			var fullWall, fullCPU, updateWall, updateCPU time.Duration
			b.SetBytes(int64(2 * len(payload)))
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					run(parseMessageFull, &fullWall, &fullCPU)
					run(parseMessage, &updateWall, &updateCPU)
				} else {
					run(parseMessage, &updateWall, &updateCPU)
					run(parseMessageFull, &fullWall, &fullCPU)
				}
			}
			mb := float64(len(payload)) * float64(b.N) / (1 << 20)
			b.ReportMetric(fullCPU.Seconds()*1000/mb, "full-cpu-ms/MiB")
			b.ReportMetric(updateCPU.Seconds()*1000/mb, "update-cpu-ms/MiB")
			b.ReportMetric(fullCPU.Seconds()/updateCPU.Seconds(), "full/update-cpu")
			b.ReportMetric(fullWall.Seconds()/updateWall.Seconds(), "full/update-wall")
		})
	}
}

// countingWriter counts the bytes written to it.
type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}
