//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestToolsSidecarRunsBatch shows on a real engine (and under its default
// seccomp profile) that the sidecar runs under SCHED_BATCH and that a
// command it starts inherits it, and that a command can go back to
// SCHED_OTHER on its own.
func TestToolsSidecarRunsBatch(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		s, _ := toolSession(t, ctx, e, nil, nil)
		// Field 41 of /proc/PID/stat is the policy; the name before it (in
		// parentheses) may hold spaces, so count from the ')'.
		const policies = `for p in $PPID $$; do sed 's/.*) //' /proc/$p/stat | cut -d' ' -f39; done; chrt -o 0 sh -c "sed 's/.*) //' /proc/self/stat | cut -d' ' -f39"`
		res, err := shellCall(ctx, s, 0, "sh", "-c", policies)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("read policies: %v %+v", err, res)
		}
		got := strings.Fields(res.Stdout)
		want := []string{"3", "3", "0"} // sidecar, command: SCHED_BATCH; after chrt -o: SCHED_OTHER
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("policies of the sidecar, a command, and a command after chrt -o 0 = %q, want %q", got, want)
		}
	})
}
