package podbot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/pool"
	"github.com/podbot/podbot/sandbox"
)

func TestMemberNames(t *testing.T) {
	if got := MemberName("evals", "0123456789ab"); got != "podbot-pool-evals-0123456789ab" {
		t.Fatal(got)
	}
	for _, c := range []struct{ pool, name, id string }{
		{"evals", "podbot-pool-evals-0123456789ab", "0123456789ab"},
		{"evals", "podbot-pool-evals-0123456789a", ""},    // short
		{"evals", "podbot-pool-evals-0123456789AB", ""},   // not lower hex
		{"evals", "podbot-tools-0123456789ab-1", ""},      // claimed
		{"ev", "podbot-pool-evals-0123456789ab", ""},      // another pool
		{"evals", "podbot-pool-evals-x-0123456789ab", ""}, // another pool's shape
		{"", "podbot-pool--0123456789ab", "0123456789ab"}, // callers validate the pool name
	} {
		if got := memberID(c.pool, c.name); got != c.id {
			t.Errorf("memberID(%q, %q) = %q, want %q", c.pool, c.name, got, c.id)
		}
	}
}

func TestCreateOptionsForAgentPools(t *testing.T) {
	cfg := config.Default() // network.mode allowlist
	cfg.Network.Allow = []string{"example.com"}
	for _, n := range []string{"", config.NetworkAllowlist} {
		o, err := createOptionsFor(pool.Spec{Name: "a", Kind: pool.KindAgent, Network: n}, cfg, "", nil)
		if err != nil || o.Egress == nil || o.Egress.Mode != egress.ModeAllowlist || len(o.Egress.Policy.Rules) != 0 || len(o.Egress.Policy.Deny) != 0 {
			t.Errorf("allowlist agent pool (network %q): a member must deny everything until its claim: %+v %v", n, o.Egress, err)
		}
	}
	if _, err := createOptionsFor(pool.Spec{Name: "a", Kind: pool.KindAgent, Network: "bridge"}, cfg, "", nil); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("bridge agent pool: %v", err)
	}
	withSecret := cfg
	withSecret.Secrets = []config.Secret{{Name: "s"}}
	if _, err := createOptionsFor(pool.Spec{Name: "a", Kind: pool.KindAgent, Network: "none"}, withSecret, "", nil); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("agent pool with secrets: %v", err)
	}
	o, err := createOptionsFor(pool.Spec{Name: "a", Kind: pool.KindAgent, Network: "none", MemoryBytes: 1 << 30, PidsLimit: 99}, cfg, "/sc", nil)
	if err != nil || o.Config.Network.Mode != "none" || o.Network != "none" || o.MemoryBytes != 1<<30 || o.PidsLimit != 99 || o.SidecarPath != "/sc" {
		t.Fatalf("%+v %v", o, err)
	}
}

func TestApplyToolsTemplate(t *testing.T) {
	tl := config.Default().Tools
	ro := false
	applyToolsTemplate(&tl, pool.Spec{Image: "img", Network: "bridge", MemoryBytes: 2 << 30, NanoCPUs: 1_500_000_000, PidsLimit: 7, ReadOnlyRootfs: &ro})
	if tl.Image != "img" || tl.Network != "bridge" || tl.Memory.Bytes() != 2<<30 || tl.CPUs != 1.5 || tl.PidsLimit != 7 || tl.ReadOnlyRootfs {
		t.Fatalf("%+v", tl)
	}
}

// removeMemberDir removes only a directory of the member's own shape: a
// label naming anything else (planted, or from another pool) is ignored.
func TestRemoveMemberDirOnlyItsOwn(t *testing.T) {
	root := t.TempDir()
	id := "0123456789ab"
	own := filepath.Join(root, "pool-evals-"+id)
	if err := os.MkdirAll(filepath.Join(own, "workspace"), 0o700); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(root, "precious")
	os.MkdirAll(filepath.Join(victim, "workspace"), 0o700)
	linked := filepath.Join(root, "pool-evals-aaaaaaaaaaaa")
	os.Symlink(victim, linked)
	for _, m := range []pool.Member{
		{Pool: "evals", Name: MemberName("evals", id), Dir: victim},                      // wrong base name
		{Pool: "evals", Name: MemberName("evals", "aaaaaaaaaaaa"), Dir: linked},          // a link
		{Pool: "evals", Name: "podbot-tools-x-1", Dir: own},                              // claimed: no member id
		{Pool: "other", Name: MemberName("other", id), Dir: own},                         // another pool's shape
		{Pool: "evals", Name: MemberName("evals", id), Dir: "relative/pool-evals-" + id}, // relative
	} {
		if err := removeMemberDir(m); err != nil {
			t.Errorf("%+v: %v", m, err)
		}
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatal("a directory outside the member's shape was removed")
	}
	if _, err := os.Stat(own); err != nil {
		t.Fatal("own directory removed through a mismatched member")
	}
	if err := removeMemberDir(pool.Member{Pool: "evals", Name: MemberName("evals", id), Dir: own}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Fatalf("member directory left: %v", err)
	}
}

// TestClaimSandboxRefusesPerSandboxSettings: what a member cannot get
// after it was made (a command, labels, hosts, a local repository copy)
// is refused before the engine is asked for anything.
func TestClaimSandboxRefusesPerSandboxSettings(t *testing.T) {
	spec := pool.Spec{Name: "a", Kind: pool.KindAgent, Size: 1, Network: config.NetworkNone}
	for name, o := range map[string]CreateOptions{
		"command":     {Command: []string{"sleep", "1"}},
		"labels":      {Labels: map[string]string{"k": "v"}},
		"allow-host":  {AllowHosts: []string{"example.com"}},
		"local clone": {LocalClone: &LocalCloneOptions{Path: "/src/repo"}},
	} {
		o.Pool = &spec
		if _, err := claimSandbox(t.Context(), nil, o); !errors.Is(err, errdefs.ErrConflict) {
			t.Errorf("%s: %v, want a conflict", name, err)
		}
	}
}

// TestPoolBackendScanAndTake: Scan names the recorded tools members of a
// pool from their directories alone (no engine call); the unpause that
// takes one removes its record, and so does one that finds the container
// gone; an unpause that loses (the member is running) leaves the record
// to the member's owner and reports pool.ErrTaken.
func TestPoolBackendScanAndTake(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	status := map[string]int{}
	conn := serveFakeEngine(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls[r.Method+" "+r.URL.Path[strings.Index(r.URL.Path[1:], "/")+1:]]++
		for id, code := range status {
			if strings.Contains(r.URL.Path, "/containers/"+id+"/unpause") {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(code)
				if code != http.StatusNoContent {
					fmt.Fprintf(w, `{"message":"unpause %s: %d"}`, id, code)
				}
				return
			}
		}
		if r.URL.Path == "/_ping" {
			w.WriteHeader(http.StatusOK)
			return
		}
		http.Error(w, "unexpected "+r.URL.Path, http.StatusTeapot)
	}))
	root := t.TempDir()
	ids := map[string]string{}
	for i, mid := range []string{"aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"} {
		dir := filepath.Join(root, "pool-evals-"+mid)
		if err := os.MkdirAll(filepath.Join(dir, "workspace"), 0o700); err != nil {
			t.Fatal(err)
		}
		cid := strings.Repeat(string(rune('1'+i)), 64)
		if err := sandbox.RecordMember(dir, cid); err != nil {
			t.Fatal(err)
		}
		ids[mid] = cid
	}
	status[ids["aaaaaaaaaaaa"]] = http.StatusNoContent // taken
	status[ids["bbbbbbbbbbbb"]] = http.StatusNotFound  // container gone
	status[ids["cccccccccccc"]] = http.StatusConflict  // running: someone else has it
	b := NewPoolBackend(conn, PoolOptions{Config: config.Default(), WorkspaceRoot: root})
	mu.Lock()
	before := len(calls)
	mu.Unlock()
	ms, err := b.Scan(context.Background(), "evals")
	if err != nil || len(ms) != 3 {
		t.Fatalf("scan = %+v, %v", ms, err)
	}
	mu.Lock()
	if len(calls) != before {
		t.Errorf("Scan called the engine: %v", calls)
	}
	mu.Unlock()
	for _, m := range ms {
		mid := memberID("evals", m.Name)
		if m.ID != ids[mid] || m.State != pool.StateReady || m.Dir != filepath.Join(root, "pool-evals-"+mid) {
			t.Errorf("scanned %+v", m)
		}
		err := b.Take(context.Background(), m)
		_, recErr := os.Lstat(filepath.Join(m.Dir, sandbox.MemberRecordName))
		switch mid {
		case "aaaaaaaaaaaa":
			if err != nil || !os.IsNotExist(recErr) {
				t.Errorf("taken: %v, record %v", err, recErr)
			}
		case "bbbbbbbbbbbb":
			if !errors.Is(err, pool.ErrTaken) || !os.IsNotExist(recErr) {
				t.Errorf("gone: %v, record %v", err, recErr)
			}
		case "cccccccccccc":
			if !errors.Is(err, pool.ErrTaken) || recErr != nil {
				t.Errorf("lost: %v, record %v", err, recErr)
			}
		}
	}
	if ms, _ := b.Scan(context.Background(), "evals"); len(ms) != 1 || memberID("evals", ms[0].Name) != "cccccccccccc" {
		t.Errorf("scan after the takes = %+v", ms)
	}
}

// TestClaimedEgressNames: a claimed member's proxy, network and egress
// directory are found by the member name it records, never by a label
// that could point elsewhere.
func TestClaimedEgressNames(t *testing.T) {
	member := "podbot-pool-a-0123456789ab"
	c := Container{Name: "mybox", Labels: map[string]string{egressnet.LabelName: member}}
	if got := egressNameOf(c); got != member {
		t.Errorf("egressNameOf(claimed) = %q", got)
	}
	for _, bad := range []string{"", "../x", "a/b", "-x", strings.Repeat("a", 300)} {
		c.Labels[egressnet.LabelName] = bad
		if got := egressNameOf(c); got != "mybox" {
			t.Errorf("egressNameOf(label %q) = %q, want the container's name", bad, got)
		}
	}
	root := "/run/user/1000/podbot/egress/" + member
	es, err := claimedEgress(map[string]string{egressnet.LabelName: member, LabelEgressDir: root})
	if err != nil || es.name != member || es.dirs.Root != root || es.dirs.PolicyPath() != root+"/policy/policy.json" || es.dirs.LoadedPath() != root+"/log/policy.loaded" {
		t.Fatalf("%+v %v", es, err)
	}
	for _, labels := range []map[string]string{
		{LabelEgressDir: root},
		{egressnet.LabelName: member},
		{egressnet.LabelName: member, LabelEgressDir: "/home/u/" + member},            // not under an egress root
		{egressnet.LabelName: member, LabelEgressDir: "/x/egress/podbot-pool-a-ffff"}, // another member's
		{egressnet.LabelName: member, LabelEgressDir: "relative/egress/" + member},
		{egressnet.LabelName: "../" + member, LabelEgressDir: root},
	} {
		if _, err := claimedEgress(labels); !errors.Is(err, errdefs.ErrInvalidValue) {
			t.Errorf("claimedEgress(%v) = %v, want a refusal", labels, err)
		}
	}
}
