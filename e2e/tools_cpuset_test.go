//go:build e2e

package e2e

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/launchplan"
)

// TestToolsSessionsPinnedApart shows automatic CPU placement on a real
// engine: a one-CPU session is pinned to one CPU (nproc inside says 1), a
// second session alive at the same time takes another CPU, and
// tools.cpuset = none leaves a session free to run anywhere.
func TestToolsSessionsPinnedApart(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		pinned := runtime.NumCPU() > 1 // a one-CPU limit on a one-CPU host is left alone
		first, conn := toolSession(t, ctx, e, nil, nil)
		second, _ := toolSession(t, ctx, e, nil, nil)
		free, _ := toolSession(t, ctx, e, func(c *config.Config) { c.Tools.CPUSet = "none" }, nil)

		a := sessionCPUSet(t, ctx, conn, first)
		b := sessionCPUSet(t, ctx, conn, second)
		if !pinned {
			if a != "" || b != "" {
				t.Errorf("one-CPU host: sessions pinned to %q and %q", a, b)
			}
		} else {
			for _, got := range []string{a, b} {
				if n, err := strconv.Atoi(got); err != nil || n < 0 || n >= runtime.NumCPU() {
					t.Errorf("session pinned to %q, want one CPU of this host", got)
				}
			}
			if a == b {
				t.Errorf("two live sessions both pinned to CPU %s", a)
			}
			if got := nproc(t, ctx, first); got != "1" {
				t.Errorf("nproc in a pinned one-CPU session = %q, want 1", got)
			}
		}
		if got := sessionCPUSet(t, ctx, conn, free); got != "" {
			t.Errorf("tools.cpuset = none: pinned to %q", got)
		}
		if got := nproc(t, ctx, free); got != strconv.Itoa(runtime.NumCPU()) {
			t.Errorf("nproc in an unpinned session = %q, want %d", got, runtime.NumCPU())
		}
	})
}

// sessionCPUSet starts s's container (one call) and returns the CPUs the
// engine says it is pinned to, checking the label records the same.
func sessionCPUSet(t *testing.T, ctx context.Context, conn *engine.Conn, s podbot.ToolSession) string {
	t.Helper()
	if _, err := shellCall(ctx, s, 0, "true"); err != nil {
		t.Fatal(err)
	}
	info, err := conn.API().ContainerInspect(ctx, s.Info().ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	if label := info.Config.Labels[launchplan.LabelCPUSet]; label != info.HostConfig.CpusetCpus {
		t.Errorf("label %s=%q but the engine pinned %q", launchplan.LabelCPUSet, label, info.HostConfig.CpusetCpus)
	}
	return info.HostConfig.CpusetCpus
}

func nproc(t *testing.T, ctx context.Context, s podbot.ToolSession) string {
	t.Helper()
	res, err := shellCall(ctx, s, 0, "nproc")
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("nproc: %v %+v", err, res)
	}
	return strings.TrimSpace(res.Stdout)
}
