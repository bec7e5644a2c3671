//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchAgent prints one line at once and exits.
const benchAgent = "#!/bin/sh\necho podbot-bench-ready\n"

// runSteps are podbot run's progress steps, in order, as stderr names them.
var runSteps = []string{"plan", "workspace", "image", "create", "credentials", "git identity", "agent"}

// BenchmarkRunFirstOutput measures the time from starting `podbot run`
// (warm image, host-mount workspace, a stub agent) to the agent's first
// output line, against a bare `ENGINE run --rm IMAGE true` measured in the
// same run, and how the time splits across podbot's steps (from the
// arrival of each progress line on stderr).
func BenchmarkRunFirstOutput(b *testing.B) {
	for _, e := range suite.engines {
		b.Run(e.Name, func(b *testing.B) {
			root, err := filepath.EvalSymlinks(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			ws := filepath.Join(root, "ws")
			if err := os.Mkdir(ws, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, "agent.sh"), []byte(benchAgent), 0o755); err != nil {
				b.Fatal(err)
			}
			giveToAgent(b, ws)
			cfgPath := filepath.Join(b.TempDir(), "config.toml")
			cfg := fmt.Sprintf("image = %q\n[agent]\nkind = \"custom\"\ncommand = \"/workspace/agent.sh\"\n[creds]\ncopy_claude = false\ncopy_codex = false\n[workspace]\nallowed_roots = [%q]\n",
				"localhost/podbot-sandbox:latest", root)
			if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
				b.Fatal(err)
			}
			bare := append(engineCLIArgs(e), "run", "--rm", "localhost/podbot-sandbox:latest", "true")
			runCLI(b, bare...) // warm both paths once
			var podbotTotal, bareTotal time.Duration
			stepTotal := map[string]time.Duration{}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				took, steps := timeRunFirstOutput(b, e, cfgPath, ws, i)
				podbotTotal += took
				for k, v := range steps {
					stepTotal[k] += v
				}
				bareTotal += runCLI(b, bare...)
			}
			b.StopTimer()
			n := float64(b.N)
			p := float64(podbotTotal.Microseconds()) / 1000 / n
			c := float64(bareTotal.Microseconds()) / 1000 / n
			b.ReportMetric(p, "first-output-ms/op")
			b.ReportMetric(c, "bare-run-ms/op")
			b.ReportMetric(p/c, "podbot/bare")
			var shares []string
			for _, s := range append([]string{"start"}, runSteps...) {
				if d, ok := stepTotal[s]; ok {
					shares = append(shares, fmt.Sprintf("%s %.0f%%", s, 100*float64(d)/float64(podbotTotal)))
				}
			}
			b.Logf("%s: podbot run to first output %.0f ms, bare `%s run --rm IMAGE true` %.0f ms, ratio %.2f (target <= 1.5); steps: %s",
				e.Name, p, e.Name, c, p/c, strings.Join(shares, ", "))
		})
	}
}

// timeRunFirstOutput runs podbot run once and returns the time to the
// agent's first output line and each step's duration ("start" is the time
// before the first progress line: process start, config, engine ping).
func timeRunFirstOutput(b *testing.B, e engineUnderTest, cfgPath, ws string, i int) (time.Duration, map[string]time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := fmt.Sprintf("pbt-%s-%s-bench-run-%d", suite.runID, e.Name, i)
	cmd := exec.CommandContext(ctx, filepath.Join(suite.bin, "podbot"), "--engine-socket", e.Endpoint,
		"run", "--rm", "--name", name, "--workspace", ws)
	cmd.Env = append(os.Environ(), "PODBOT_CONFIG_PATH="+cfgPath)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	outLines, errLines := watchLines(stdout), watchLines(stderr)
	got, ok := outLines.waitLines("podbot-bench-ready", 1, 50*time.Second)
	if !ok {
		_ = cmd.Process.Kill()
		all, _ := errLines.waitLines("\x00never", 1, time.Second)
		b.Fatalf("no agent output:\n%s%s", joinLines(got), joinLines(all))
	}
	var first time.Time
	for _, l := range got {
		if strings.HasPrefix(l.text, "podbot-bench-ready") {
			first = l.at
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("podbot run: %v", err)
	}
	progress, _ := errLines.waitLines("\x00never", 1, 5*time.Second)
	steps := map[string]time.Duration{}
	prevName, prevAt := "start", start
	for _, l := range progress {
		rest, ok := strings.CutPrefix(l.text, "podbot: ")
		if !ok || l.at.After(first) {
			continue
		}
		step, _, _ := strings.Cut(rest, ":")
		steps[prevName] += l.at.Sub(prevAt)
		prevName, prevAt = step, l.at
	}
	steps[prevName] += first.Sub(prevAt)
	return first.Sub(start), steps
}
