//go:build e2e

package e2e

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/launchplan"
)

// TestToolsSessionsPinnedApart shows automatic CPU placement on a real
// engine: a one-CPU session is pinned to one CPU (nproc inside says 1), a
// second session alive at the same time takes a CPU the fewest podbot
// containers hold (on an otherwise idle engine, not the first one's), and
// tools.cpuset = none leaves a session free to run anywhere.
func TestToolsSessionsPinnedApart(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		pinned := runtime.NumCPU() > 1 // a one-CPU limit on a one-CPU host is left alone
		first, conn := toolSession(t, ctx, e, nil, nil)
		second, _ := toolSession(t, ctx, e, nil, nil)
		free, _ := toolSession(t, ctx, e, func(c *config.Config) { c.Tools.CPUSet = "none" }, nil)

		used := pinnedUsage(t, ctx, conn) // podbot containers this test did not start
		a := sessionCPUSet(t, ctx, conn, first)
		used[a]++
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
			least := used["0"]
			for cpu := range runtime.NumCPU() {
				least = min(least, used[strconv.Itoa(cpu)])
			}
			if used[b] != least {
				t.Errorf("second session pinned to CPU %s, which %d podbot containers hold; some CPU holds %d (%v)", b, used[b], least, used)
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
// engine says it is pinned to, checking that the label and the session's
// Info say the same.
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
	if got := s.Info().CPUSet; got != info.HostConfig.CpusetCpus {
		t.Errorf("session info says cpuset %q but the engine pinned %q", got, info.HostConfig.CpusetCpus)
	}
	return info.HostConfig.CpusetCpus
}

// pinnedUsage counts the running containers pinned to each single CPU, by
// the label podbot sets.
func pinnedUsage(t *testing.T, ctx context.Context, conn *engine.Conn) map[string]int {
	t.Helper()
	list, err := conn.API().ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(filters.Arg("label", launchplan.LabelCPUSet))})
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]int{}
	for _, c := range list {
		used[c.Labels[launchplan.LabelCPUSet]]++
	}
	return used
}

func nproc(t *testing.T, ctx context.Context, s podbot.ToolSession) string {
	t.Helper()
	res, err := shellCall(ctx, s, 0, "nproc")
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("nproc: %v %+v", err, res)
	}
	return strings.TrimSpace(res.Stdout)
}
