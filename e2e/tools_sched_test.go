//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot/config"
)

// TestToolsSidecarRunsBatch shows on a real engine (and under its default
// seccomp profile) that the sidecar runs under SCHED_BATCH, that a command
// it starts inherits it and can go back to SCHED_OTHER on its own, and
// that tools.batch_scheduling = false leaves both under SCHED_OTHER.
func TestToolsSidecarRunsBatch(t *testing.T) {
	// Field 41 of /proc/PID/stat is the policy; the name before it (in
	// parentheses) may hold spaces, so count from the ')'.
	const policies = `for p in $PPID $$; do sed 's/.*) //' /proc/$p/stat | cut -d' ' -f39; done; chrt -o 0 sh -c "sed 's/.*) //' /proc/self/stat | cut -d' ' -f39"`
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		for _, tc := range []struct {
			batch bool
			want  string // sidecar, command, command after chrt -o 0
		}{{true, "3 3 0"}, {false, "0 0 0"}} {
			s, _ := toolSession(t, ctx, e, func(c *config.Config) { c.Tools.BatchScheduling = tc.batch }, nil)
			res, err := shellCall(ctx, s, 0, "sh", "-c", policies)
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("read policies: %v %+v", err, res)
			}
			if got := strings.Join(strings.Fields(res.Stdout), " "); got != tc.want {
				t.Errorf("tools.batch_scheduling = %v: policies of the sidecar, a command, and a command after chrt -o 0 = %q, want %q (3 SCHED_BATCH, 0 SCHED_OTHER)", tc.batch, got, tc.want)
			}
		}
	})
}
