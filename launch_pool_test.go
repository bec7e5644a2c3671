package podbot

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/pool"
	"github.com/podbot/podbot/sandbox"
	"github.com/podbot/podbot/tokendaemon"
)

// poolLaunchConfig is a configuration a pooled launch accepts: a custom
// agent, network none.
func poolLaunchConfig() config.Config {
	c := config.Default()
	c.Image = "localhost/podbot-sandbox:latest"
	c.Agent.Kind = config.KindCustom
	c.Agent.Command = "/bin/true"
	c.Network.Mode = config.NetworkNone
	return c
}

// TestCheckPoolLaunchRefuses: everything a member made ahead of the claim
// cannot take is refused with the option named, before anything is claimed.
func TestCheckPoolLaunchRefuses(t *testing.T) {
	spec := pool.Spec{Name: "a", Kind: pool.KindAgent, Size: 1, Network: config.NetworkNone}
	ok := LaunchOptions{Config: poolLaunchConfig()}
	if err := checkPoolLaunch(spec, ok); err != nil {
		t.Fatalf("a matching launch is refused: %v", err)
	}
	withCfg := func(f func(*config.Config)) LaunchOptions {
		o := LaunchOptions{Config: poolLaunchConfig()}
		f(&o.Config)
		return o
	}
	cases := map[string]struct {
		spec pool.Spec
		opts LaunchOptions
		key  string
	}{
		"tools pool":       {pool.Spec{Name: "t", Kind: pool.KindTools, Size: 1}, ok, "pool"},
		"--workspace":      {spec, LaunchOptions{Config: poolLaunchConfig(), HostPath: "/src/app"}, "workspace.host_path"},
		"host_mount":       {spec, withCfg(func(c *config.Config) { c.Workspace.Source, c.Workspace.HostPath = config.SourceHostMount, "/src" }), "workspace.host_path"},
		"--repo PATH":      {spec, LaunchOptions{Config: poolLaunchConfig(), LocalClone: &LocalCloneOptions{Path: "/src/app"}}, "workspace.source"},
		"local_clone":      {spec, withCfg(func(c *config.Config) { c.Workspace.Source, c.Workspace.RepoPath = config.SourceLocalClone, "/src" }), "workspace.source"},
		"other mode":       {spec, withCfg(func(c *config.Config) { c.Network.Mode = config.NetworkOpen }), "network.mode"},
		"allowlist launch": {spec, withCfg(func(c *config.Config) { c.Network.Mode = config.NetworkAllowlist }), "network.mode"},
		"egress override":  {spec, LaunchOptions{Config: poolLaunchConfig(), Egress: &launchplan.Egress{Mode: egress.ModeAllowlist}}, "network.mode"},
		"secrets":          {spec, withCfg(func(c *config.Config) { c.Secrets = []config.Secret{{Name: "K"}} }), config.SecretsKey},
		"allowlist secrets": {pool.Spec{Name: "a", Kind: pool.KindAgent, Size: 1}, withCfg(func(c *config.Config) {
			c.Network.Mode = config.NetworkAllowlist
			c.Secrets = []config.Secret{{Name: "K"}}
		}), config.SecretsKey},
	}
	// An allowlist launch with its own egress rules claims from an
	// allowlist pool (the rules are written into the member's policy).
	allow := LaunchOptions{Config: poolLaunchConfig(), AllowHosts: []string{"example.com"}}
	allow.Config.Network.Mode = config.NetworkAllowlist
	for _, s := range []pool.Spec{{Name: "a", Kind: pool.KindAgent, Size: 1}, {Name: "a", Kind: pool.KindAgent, Size: 1, Network: config.NetworkAllowlist}} {
		if err := checkPoolLaunch(s, allow); err != nil {
			t.Errorf("an allowlist launch with --allow-host on pool network %q is refused: %v", s.Network, err)
		}
	}
	// A launch that clones with a GitHub App claims too (the token is
	// minted into the member's token directory at the claim).
	if err := checkPoolLaunch(spec, LaunchOptions{Config: poolLaunchConfig(), Repo: "acme/app", TokenSource: fakeTokenSource{}}); err != nil {
		t.Errorf("a launch with a GitHub App is refused: %v", err)
	}
	for name, c := range cases {
		err := checkPoolLaunch(c.spec, c.opts)
		var ce *errdefs.ConfigError
		if !errors.As(err, &ce) || ce.Key != c.key {
			t.Errorf("%s: %v, want a configuration error on %s", name, err, c.key)
			continue
		}
		if name != "tools pool" && (!errors.Is(err, errdefs.ErrRefused) || !strings.Contains(err.Error(), "without --pool")) {
			t.Errorf("%s: %v: want a refusal that names the fix", name, err)
		}
	}
}

type fakeTokenSource struct{ tokendaemon.TokenSource }

// TestMemberPlanMatchesLaunchPlan: the member podbot pool makes for an
// agent pool (podbot create's plan with the template) has the same
// hardening as the plan podbot run and podbot host make with the same
// configuration and template, so a claim is possible at all; and another
// configuration is told apart, naming what differs.
func TestMemberPlanMatchesLaunchPlan(t *testing.T) {
	conn, err := engine.Connect(context.Background(), engine.Endpoint{Raw: "tcp://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	ro := true
	for _, spec := range []pool.Spec{
		{Name: "none", Kind: pool.KindAgent, Size: 1, Network: config.NetworkNone},
		{Name: "open", Kind: pool.KindAgent, Size: 1, Network: config.NetworkOpen, MemoryBytes: 1 << 30, NanoCPUs: 1_500_000_000, PidsLimit: 300, ReadOnlyRootfs: &ro, Image: "localhost/other:1"},
		{Name: "allowlist", Kind: pool.KindAgent, Size: 1, Network: config.NetworkAllowlist},
		{Name: "default", Kind: pool.KindAgent, Size: 1}, // network.mode: allowlist
	} {
		cfg := poolLaunchConfig()
		cfg.Network.Mode = spec.Network
		if spec.Network == "" {
			cfg.Network.Mode = config.NetworkAllowlist
			cfg.Network.Allow = []string{"example.com"}
		}
		member := memberPlan(t, conn, spec, cfg)
		for _, intent := range []launchplan.Intent{launchplan.IntentInteractive, launchplan.IntentHosting} {
			opts := LaunchOptions{Config: cfg, Intent: intent, Repo: "acme/app", Branch: "main", SidecarPath: "x"}
			if intent == launchplan.IntentHosting {
				opts.Config.Agent.Mode = config.ModeACP
			}
			req, _, err := launchRequest(conn, opts)
			if err != nil {
				t.Fatal(err)
			}
			applyAgentTemplate(&req, spec)
			plan, err := launchplan.Normalize(req)
			if err != nil {
				t.Fatal(err)
			}
			if err := plan.Apply(sandbox.WithSidecarMount("/usr/local/bin/podbot-sidecar")); err != nil {
				t.Fatal(err)
			}
			applyEgressMode(&plan)
			if d := hardeningOf(plan).differences(member); len(d) > 0 {
				t.Errorf("%s %s: the launch's plan differs from the member's in %v:\nlaunch %+v\nmember %+v", spec.Name, intent, d, hardeningOf(plan), member)
			}
			got, ok := parseHardening(member.label())
			if !ok || len(hardeningOf(plan).differences(got)) > 0 {
				t.Errorf("%s: the label does not round-trip: %q", spec.Name, member.label())
			}
		}
	}
	// A member whose proxy trusts another upstream CA is told apart.
	aspec := pool.Spec{Name: "a", Kind: pool.KindAgent, Size: 1}
	acfg := poolLaunchConfig()
	acfg.Network.Mode = config.NetworkAllowlist
	aother := acfg
	ca, err := egress.NewCA("podbot test upstream")
	if err != nil {
		t.Fatal(err)
	}
	aother.Network.UpstreamCA = filepath.Join(t.TempDir(), "upstream.pem")
	if err := os.WriteFile(aother.Network.UpstreamCA, ca.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	if d := hardeningOf(planOf(t, conn, aspec, acfg)).differences(memberPlan(t, conn, aspec, aother)); !slices.Contains(d, "upstream_ca") {
		t.Errorf("differences %v lack upstream_ca", d)
	}
	// A member made with other limits or privileges is told apart.
	spec := pool.Spec{Name: "none", Kind: pool.KindAgent, Size: 1, Network: config.NetworkNone}
	cfg := poolLaunchConfig()
	other := cfg
	other.Sandbox.Memory = 1 << 30
	other.Sandbox.Privileged = true
	d := hardeningOf(planOf(t, conn, spec, cfg)).differences(memberPlan(t, conn, spec, other))
	for _, want := range []string{"privileged", "resources"} {
		if !slices.Contains(d, want) {
			t.Errorf("differences %v lack %s", d, want)
		}
	}
	msg := (&MemberMismatchError{Pool: "none", Member: "podbot-pool-none-0123456789ab", Fields: d,
		want: hardeningOf(planOf(t, conn, spec, cfg)), got: memberPlan(t, conn, spec, other)}).Error()
	if !strings.Contains(msg, "privileged: member true, this launch false") {
		t.Errorf("the mismatch error does not say what differs: %s", msg)
	}
	if _, ok := parseHardening(strings.Repeat("x", maxHardeningLabel+1)); ok {
		t.Error("an oversized label was accepted")
	}
	if _, ok := parseHardening(""); ok {
		t.Error("a missing label was accepted")
	}
}

// memberPlan is the hardening of the plan PoolBackend.Create makes for an
// agent member of spec under cfg (createOptionsFor, then create's plan).
func memberPlan(t *testing.T, conn *engine.Conn, spec pool.Spec, cfg config.Config) hardening {
	t.Helper()
	copts, err := createOptionsFor(spec, cfg, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	copts.SidecarPath = "/usr/local/bin/podbot-sidecar"
	req, err := CreateRequest(conn.Endpoint(), copts)
	if err != nil {
		t.Fatal(err)
	}
	req.InitCommand = []string{SidecarTarget, "init"}
	plan, err := launchplan.Normalize(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.Apply(sandbox.WithSidecarMount(copts.SidecarPath)); err != nil {
		t.Fatal(err)
	}
	applyEgressMode(&plan)
	return hardeningOf(plan)
}

// planOf is the plan podbot run makes under cfg with spec's template.
func planOf(t *testing.T, conn *engine.Conn, spec pool.Spec, cfg config.Config) launchplan.Plan {
	t.Helper()
	req, _, err := launchRequest(conn, LaunchOptions{Config: cfg, Intent: launchplan.IntentInteractive, SidecarPath: "x"})
	if err != nil {
		t.Fatal(err)
	}
	applyAgentTemplate(&req, spec)
	plan, err := launchplan.Normalize(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.Apply(sandbox.WithSidecarMount("/usr/local/bin/podbot-sidecar")); err != nil {
		t.Fatal(err)
	}
	applyEgressMode(&plan)
	return plan
}

// unpauseFake is inspectFake that also answers unpause, recording it.
type unpauseFake struct {
	*inspectFake
	mu       sync.Mutex
	unpaused []string
}

func (f *unpauseFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := apiPrefix.ReplaceAllString(r.URL.Path, "")
	if id, ok := strings.CutSuffix(strings.TrimPrefix(p, "/containers/"), "/unpause"); ok && r.Method == http.MethodPost {
		f.mu.Lock()
		f.unpaused = append(f.unpaused, id)
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	f.inspectFake.ServeHTTP(w, r)
}

// TestMatchingBackendTakesOnlyLikeMembers: a launch takes (unpauses) a
// member only when the hardening it records equals the launch's plan; a
// member that records other settings, or none, is left paused in the pool
// and the error says why; a member gone meanwhile counts as taken.
func TestMatchingBackendTakesOnlyLikeMembers(t *testing.T) {
	conn0, err := engine.Connect(context.Background(), engine.Endpoint{Raw: "tcp://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	spec := pool.Spec{Name: "p", Kind: pool.KindAgent, Size: 1, Network: config.NetworkNone}
	want := hardeningOf(planOf(t, conn0, spec, poolLaunchConfig()))
	other := want
	other.Resources.MemoryBytes = 1 << 30
	other.CapAdd = append([]string{"SYS_ADMIN"}, other.CapAdd...)
	label := func(h hardening) map[string]string { return map[string]string{LabelPoolHardening: h.label()} }
	f := &unpauseFake{inspectFake: &inspectFake{containers: []fakeCtr{
		{id: "aaa1", name: "podbot-pool-p-000000000001", labels: label(want), state: "paused"},
		{id: "bbb2", name: "podbot-pool-p-000000000002", labels: label(other), state: "paused"},
		{id: "ccc3", name: "podbot-pool-p-000000000003", state: "paused"},
	}}}
	conn := serveFakeEngine(t, f)
	b := &matchingBackend{PoolBackend: NewPoolBackend(conn, PoolOptions{}), want: want}
	member := func(id, name string) pool.Member {
		return pool.Member{Pool: "p", ID: id, Name: name, State: pool.StateReady}
	}

	var mm *MemberMismatchError
	err = b.Take(t.Context(), member("bbb2", "podbot-pool-p-000000000002"))
	if !errors.As(err, &mm) || !slices.Equal(mm.Fields, []string{"cap_add", "resources"}) || !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a member with other settings: %v", err)
	}
	err = b.Take(t.Context(), member("ccc3", "podbot-pool-p-000000000003"))
	if !errors.As(err, &mm) || len(mm.Fields) != 0 || !strings.Contains(err.Error(), "older podbot") {
		t.Errorf("a member recording nothing: %v", err)
	}
	if err := b.Take(t.Context(), member("ddd4", "podbot-pool-p-000000000004")); !errors.Is(err, pool.ErrTaken) {
		t.Errorf("a member gone meanwhile: %v, want ErrTaken", err)
	}
	if err := b.Take(t.Context(), member("aaa1", "podbot-pool-p-000000000001")); err != nil {
		t.Errorf("a matching member: %v", err)
	}
	// The tag has moved since the member was made: not a cold launch's.
	moved := &matchingBackend{PoolBackend: b.PoolBackend, want: want, imageID: "sha256:0123456789abcdef"}
	err = moved.Take(t.Context(), member("aaa1", "podbot-pool-p-000000000001"))
	if !errors.As(err, &mm) || !slices.Equal(mm.Fields, []string{"image_id"}) || !strings.Contains(err.Error(), "this launch 0123456789ab (") {
		t.Errorf("a member of an older image: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Equal(f.unpaused, []string{"aaa1"}) {
		t.Errorf("unpaused %v, want only the matching member", f.unpaused)
	}
}

// FuzzParseHardening: any label value is read without panicking, bounded,
// and what is read writes back to a label that reads the same.
func FuzzParseHardening(f *testing.F) {
	f.Add(hardening{Image: "img", CapAdd: []string{"CHOWN"}, Mounts: []hardeningMount{{Source: "/a", Target: "/b", ReadOnly: true}}}.label())
	f.Add(`{"resources":{"PidsLimit":-1}}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, v string) {
		h, ok := parseHardening(v)
		if !ok {
			return
		}
		if len(v) > maxHardeningLabel {
			t.Fatalf("accepted %d bytes", len(v))
		}
		back, ok := parseHardening(h.label())
		if !ok || len(h.differences(back)) != 0 {
			t.Fatalf("%q does not round-trip: %+v vs %+v", v, h, back)
		}
	})
}
