package egressnet

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/errdefs"
)

func TestPolicyRoundTripIsAtomicAndReadable(t *testing.T) {
	d, err := DirsFor(t.TempDir(), "sb1")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Make(); err != nil {
		t.Fatal(err)
	}
	p := &egress.Policy{Rules: []egress.Rule{{Host: "api.example.com", Source: "network.allow"}, {Host: "*.example.org", Ports: []int{8443}}},
		Deny: []egress.Rule{{Host: "evil.example.com", Source: "podbot network"}}, Resolve: map[string]string{"a.test": "10.0.0.1"}}
	if err := WritePolicy(d.PolicyPath(), p); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPolicy(d.PolicyPath())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rules) != 2 || got.Rules[0].Source != "network.allow" || got.Rules[1].Ports[0] != 8443 ||
		got.Deny[0].Host != "evil.example.com" || got.Resolve["a.test"] != "10.0.0.1" {
		t.Fatalf("round trip = %+v", got)
	}
	st, err := os.Stat(d.PolicyPath())
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("policy file mode = %v, %v", st.Mode(), err)
	}
	for _, dir := range []string{d.Root, d.Policy, d.Log} {
		st, err := os.Stat(dir)
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("%s mode = %v, %v", dir, st.Mode(), err)
		}
	}
	entries, _ := os.ReadDir(d.Policy)
	if len(entries) != 1 {
		t.Fatalf("policy dir holds %d entries (temporary file left?)", len(entries))
	}
	if err := d.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Root); !os.IsNotExist(err) {
		t.Fatalf("Remove left %s: %v", d.Root, err)
	}
	if _, err := os.Stat(filepath.Dir(filepath.Dir(d.Root))); !os.IsNotExist(err) {
		t.Fatalf("Remove left the empty podbot/egress directories: %v", err)
	}
	// A parent that holds something else stays.
	d2, _ := DirsFor(filepath.Dir(filepath.Dir(filepath.Dir(d.Root))), "sb2")
	d3, _ := DirsFor(filepath.Dir(filepath.Dir(filepath.Dir(d.Root))), "sb3")
	if err := d2.Make(); err != nil {
		t.Fatal(err)
	}
	if err := d3.Make(); err != nil {
		t.Fatal(err)
	}
	if err := d2.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d3.Policy); err != nil {
		t.Fatalf("Remove of one sandbox took another's: %v", err)
	}
}

func TestReadPolicyErrors(t *testing.T) {
	dir := t.TempDir()
	var fe *errdefs.FilesystemError
	if _, err := ReadPolicy(filepath.Join(dir, "missing.json")); !errors.As(err, &fe) || !strings.Contains(fe.Msg, "allowlist") {
		t.Fatalf("missing: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte("{not json"), 0o600)
	if _, err := ReadPolicy(bad); !errors.As(err, &fe) || fe.Op != "parse" {
		t.Fatalf("bad json: %v", err)
	}
	big := filepath.Join(dir, "big.json")
	_ = os.WriteFile(big, []byte(`{"rules":[`+strings.Repeat(" ", egress.MaxPolicyFileBytes)+`]}`), 0o600)
	if _, err := ReadPolicy(big); !errors.As(err, &fe) || fe.Op != "parse" {
		t.Fatalf("big: %v", err)
	}
}

func TestDirsForRefusesPathNames(t *testing.T) {
	for _, name := range []string{"", ".", "..", "../x", "a/b"} {
		if _, err := DirsFor("/run/user/1", name); !errors.Is(err, errdefs.ErrInvalidValue) {
			t.Errorf("DirsFor(%q) = %v, want ErrInvalidValue", name, err)
		}
	}
	d, err := DirsFor("/run/user/1", "sb")
	if err != nil || d.Root != "/run/user/1/podbot/egress/sb" || d.PolicyPath() != "/run/user/1/podbot/egress/sb/policy/policy.json" ||
		d.LogPath() != "/run/user/1/podbot/egress/sb/log/decisions.jsonl" {
		t.Fatalf("DirsFor = %+v, %v", d, err)
	}
}

func TestProxyIsHardened(t *testing.T) {
	s := ProxySpec{Sandbox: "sb", Image: "img", SidecarHost: "/usr/bin/podbot-sidecar", SidecarTarget: "/podbot/sidecar",
		Dirs: Dirs{Policy: "/p", Log: "/l"}, UpstreamCA: "/ca.pem", Labels: map[string]string{"podbot.version": "v"}}
	cfg, hc, _ := s.Render()
	if cfg.Entrypoint[0] != "/podbot/sidecar" || cfg.Cmd[0] != "egress" || !slices.Contains(cfg.Cmd, "0.0.0.0:3128") ||
		!slices.Contains(cfg.Cmd, "/etc/podbot-egress/policy.json") || !slices.Contains(cfg.Cmd, "/var/log/podbot-egress/decisions.jsonl") ||
		!slices.Contains(cfg.Cmd, UpstreamCATarget) {
		t.Fatalf("command = %v %v", cfg.Entrypoint, cfg.Cmd)
	}
	if cfg.User == "" || cfg.User == "0" || cfg.User == "root" {
		if os.Geteuid() == 0 || cfg.User == "" {
			t.Fatalf("proxy user = %q", cfg.User)
		}
	}
	if cfg.Labels[LabelSandbox] != "sb" || cfg.Labels[LabelRole] != RoleProxy || cfg.Labels["podbot.version"] != "v" {
		t.Fatalf("labels = %v", cfg.Labels)
	}
	if !slices.Equal(hc.CapDrop, []string{"ALL"}) || len(hc.CapAdd) != 0 || !slices.Contains(hc.SecurityOpt, "no-new-privileges") ||
		!hc.ReadonlyRootfs || hc.PidsLimit == nil || *hc.PidsLimit <= 0 || hc.Memory <= 0 || hc.Privileged || hc.NetworkMode != "bridge" {
		t.Fatalf("host config not hardened: %+v", hc)
	}
	ro := map[string]bool{}
	for _, m := range hc.Mounts {
		ro[m.Target] = m.ReadOnly
	}
	if !ro["/podbot/sidecar"] || !ro[PolicyDirTarget] || ro[LogDirTarget] || !ro[UpstreamCATarget] || len(ro) != 4 {
		t.Fatalf("mounts = %+v", hc.Mounts)
	}
}

func TestNetlockHelperHasOnlyNetAdmin(t *testing.T) {
	s := NetlockSpec{SandboxID: "abc", Image: "img", SidecarHost: "/sc", SidecarTarget: "/podbot/sidecar",
		Block: []netip.Addr{netip.MustParseAddr("10.89.0.1")}}
	cfg, hc, _ := s.Render()
	if !slices.Equal(cfg.Cmd, []string{"netlock", "--block", "10.89.0.1"}) || cfg.Entrypoint[0] != "/podbot/sidecar" {
		t.Fatalf("command = %v %v", cfg.Entrypoint, cfg.Cmd)
	}
	if string(hc.NetworkMode) != "container:abc" || !slices.Equal(hc.CapDrop, []string{"ALL"}) || !slices.Equal(hc.CapAdd, []string{"NET_ADMIN"}) ||
		!slices.Contains(hc.SecurityOpt, "no-new-privileges") || !hc.ReadonlyRootfs || len(hc.Mounts) != 1 || !hc.Mounts[0].ReadOnly {
		t.Fatalf("helper host config = %+v", hc)
	}
}

func TestSandboxEnvAndSysctls(t *testing.T) {
	env := SandboxEnv(netip.MustParseAddr("10.89.0.2"))
	for _, want := range []string{"HTTP_PROXY=http://10.89.0.2:3128", "HTTPS_PROXY=http://10.89.0.2:3128", "http_proxy=http://10.89.0.2:3128",
		"https_proxy=http://10.89.0.2:3128", "NO_PROXY=localhost,127.0.0.1"} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %s: %v", want, env)
		}
	}
	if SandboxSysctls()["net.ipv6.conf.all.disable_ipv6"] != "1" {
		t.Fatal("IPv6 not disabled")
	}
	if NetworkName("x") != "podbot-net-x" || ProxyName("x") != "podbot-egress-x" {
		t.Fatal("names")
	}
}

func TestTrustDirIsReadableAndGoesWithTheEgressDir(t *testing.T) {
	d, err := DirsFor(t.TempDir(), "sb")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(d.Trust) != d.Root {
		t.Fatalf("trust dir %s is not under %s", d.Trust, d.Root)
	}
	if err := d.Make(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(d.Trust)
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("trust dir: %v %v", st, err)
	}
	for _, name := range []string{TrustCAFile, TrustBundleFile} {
		if err := d.WriteTrust(name, []byte("old")); err != nil {
			t.Fatal(err)
		}
		if err := d.WriteTrust(name, []byte("CERT\n")); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(d.TrustPath(name))
		st, serr := os.Stat(d.TrustPath(name))
		if err != nil || serr != nil || string(b) != "CERT\n" || st.Mode().Perm() != 0o644 {
			t.Fatalf("%s: %q %v %v %v", name, b, st, err, serr)
		}
	}
	if ents, _ := os.ReadDir(d.Trust); len(ents) != 2 {
		t.Fatalf("temporary files left behind: %v", ents)
	}
	for _, bad := range []string{"../x", "", "..", "a/b"} {
		if err := d.WriteTrust(bad, nil); err == nil {
			t.Errorf("WriteTrust(%q) accepted", bad)
		}
	}
	if err := d.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Trust); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the trust dir outlived Remove: %v", err)
	}
}

// TestDirsMakeUnderFileReportsOnce: where a file stands in the way of the
// egress root, Make fails naming it and Remove has nothing to remove, so a
// failed start reports one error, not a second about the removal.
func TestDirsMakeUnderFileReportsOnce(t *testing.T) {
	run := t.TempDir()
	if err := os.WriteFile(filepath.Join(run, "podbot"), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := DirsFor(run, "sb")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Make(); err == nil {
		t.Fatal("Make under a file succeeded")
	}
	if err := d.Remove(); err != nil {
		t.Fatalf("Remove after a failed Make: %v", err)
	}
}
