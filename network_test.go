package podbot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

func TestReadLogLinesAndBounds(t *testing.T) {
	p := filepath.Join(t.TempDir(), "decisions.jsonl")
	long := `{"host":"` + strings.Repeat("a", maxLogLine) + `"}`
	if err := os.WriteFile(p, []byte(`{"host":"a"}`+"\n"+long+"\n"+`{"host":"b"}`+"\n"+`{"host":"partial`), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := readLog(context.Background(), p, NetworkLogOptions{}, func(l []byte) error { got = append(got, string(l)); return nil })
	if err != nil || len(got) != 2 || got[0] != `{"host":"a"}` || got[1] != `{"host":"b"}` {
		t.Fatalf("readLog = %q, %v", got, err)
	}
	stop := errors.New("stop")
	if err := readLog(context.Background(), p, NetworkLogOptions{}, func([]byte) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("fn's error = %v", err)
	}
	if err := readLog(context.Background(), filepath.Join(t.TempDir(), "none"), NetworkLogOptions{}, func([]byte) error { return nil }); err != nil {
		t.Fatalf("missing log = %v, want nothing", err)
	}
}

func TestReadLogFollowSeesNewLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "decisions.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lines := make(chan string, 4)
	done := make(chan error, 1)
	go func() {
		done <- readLog(ctx, p, NetworkLogOptions{Follow: true, Poll: 10 * time.Millisecond}, func(l []byte) error {
			lines <- string(l)
			return nil
		})
	}()
	time.Sleep(30 * time.Millisecond) // the file does not exist yet
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, _ = f.WriteString(`{"n":1`)
	time.Sleep(30 * time.Millisecond)
	_, _ = f.WriteString("}\n")
	if l := <-lines; l != `{"n":1}` {
		t.Fatalf("line = %q", l)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("follow ended with %v", err)
	}
}

func TestEgressModeShapesTheSandbox(t *testing.T) {
	for _, tc := range []struct {
		mode    egress.Mode
		network string
		locked  bool
	}{
		{"", "bridge", false},
		{egress.ModeOpen, "bridge", false},
		{egress.ModeNone, "none", false},
		{egress.ModeAllowlist, "bridge", true}, // prepareEgress points it at the internal network
	} {
		plan := launchplan.Plan{Network: "bridge", Labels: map[string]string{}, Egress: launchplan.Egress{Mode: tc.mode}}
		applyEgressMode(&plan)
		if plan.Network != tc.network {
			t.Errorf("%q: network = %q, want %q", tc.mode, plan.Network, tc.network)
		}
		hc := &container.HostConfig{}
		sandboxHostConfig(plan, hc)
		if locked := len(hc.DNS) > 0; locked != tc.locked || (tc.locked && hc.Sysctls["net.ipv6.conf.all.disable_ipv6"] != "1") {
			t.Errorf("%q: host config = %+v", tc.mode, hc)
		}
		if tc.mode == egress.ModeAllowlist && plan.Labels[egressnet.LabelMode] != "allowlist" {
			t.Errorf("allowlist label missing: %v", plan.Labels)
		}
	}
}

func TestWithoutDropsTheSameRuleOnly(t *testing.T) {
	rs := []egress.Rule{{Host: "a.test"}, {Host: "a.test", Ports: []int{8443}}, {Host: "b.test"}}
	got := without(rs, egress.Rule{Host: "a.test"})
	if len(got) != 2 || got[0].Ports[0] != 8443 || got[1].Host != "b.test" || len(rs) != 3 {
		t.Fatalf("without = %+v (input %+v)", got, rs)
	}
}

func TestAllowlistRefusesSandboxesThatCouldUndoTheLock(t *testing.T) {
	ok := launchplan.Plan{Security: launchplan.Security{CapAdd: []string{"CHOWN", "NET_BIND_SERVICE"}}}
	if err := checkLockable(ok); err != nil {
		t.Fatalf("minimal profile refused: %v", err)
	}
	for _, p := range []launchplan.Plan{
		{Security: launchplan.Security{Privileged: true}},
		{Security: launchplan.Security{CapAdd: []string{"NET_ADMIN"}}},
		{Security: launchplan.Security{CapAdd: []string{"CHOWN", "NET_RAW"}}},
	} {
		var ce *errdefs.ConfigError
		if err := checkLockable(p); !errors.As(err, &ce) || !errors.Is(err, errdefs.ErrConflict) {
			t.Errorf("%+v: %v, want a ConfigError conflict", p.Security, err)
		}
	}
}
