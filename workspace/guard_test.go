package workspace

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

// attackTree builds base/home (a home directory with credentials) holding
// proj/, and returns base and home.
func attackTree(t *testing.T) (base, home string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home = filepath.Join(base, "home")
	for _, d := range []string{"home/proj/src", "home/.ssh", "home/.config/podbot", "home/.aws", "state/run"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return base, home
}

func wantRefused(t *testing.T, err error, mention string) {
	t.Helper()
	if !errors.Is(err, errdefs.ErrRefused) || !errors.Is(err, errdefs.ErrConfig) {
		t.Fatalf("err = %v, want a refused config error", err)
	}
	if !strings.Contains(err.Error(), mention) {
		t.Fatalf("err = %q, want it to name %q", err, mention)
	}
}

// An attacker's wish list: each mount would hand the sandbox a way out or a
// credential to carry away; each must be refused and the error must name why.
func TestResolveHostMountRefusesExposures(t *testing.T) {
	base, home := attackTree(t)
	key := filepath.Join(base, "state", "app.pem")
	if err := os.WriteFile(key, []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(home, "proj", "podbot.toml")
	if err := os.WriteFile(cfgFile, []byte(""), 0o600); err != nil {
		t.Fatal(err)
	}
	policy := HostMountPolicy{
		AllowedRoots: []string{base},
		Home:         home,
		Protected: []Protected{
			{Path: key, What: "the GitHub App private key"},
			{Path: filepath.Join(base, "state", "run"), What: "podbot's token directories"},
		},
	}
	tests := []struct {
		name, host, mention string
		protect             []Protected
	}{
		{"home itself", home, "home directory", nil},
		{"a credential dir", filepath.Join(home, ".ssh"), ".ssh", nil},
		{"a dir holding credentials", base, "contains", nil},
		{"podbot's config dir", filepath.Join(home, ".config"), ".config/podbot", nil},
		{"the private key's dir", filepath.Join(base, "state"), "private key", nil},
		{"inside the token dirs", filepath.Join(base, "state", "run"), "token directories", nil},
		{"a config file inside the project", filepath.Join(home, "proj"), "podbot's config file",
			[]Protected{{Path: cfgFile, What: "podbot's config file"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy
			p.Protected = append(append([]Protected(nil), policy.Protected...), tt.protect...)
			_, err := ResolveHostMount(tt.host, "/workspace", p)
			wantRefused(t, err, tt.mention)
		})
	}
	// The project alone is fine.
	if m, err := ResolveHostMount(filepath.Join(home, "proj"), "/workspace", policy); err != nil || m.Source != filepath.Join(home, "proj") {
		t.Fatalf("project mount = %+v, %v", m, err)
	}
}

// A unix socket anywhere in the tree (another engine's, an agent's, an
// ssh-agent's) is refused, named, however deep it sits.
func TestResolveHostMountRefusesSockets(t *testing.T) {
	base, home := attackTree(t)
	proj := filepath.Join(home, "proj")
	sock := filepath.Join(proj, "src", "engine.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = ResolveHostMount(proj, "/workspace", HostMountPolicy{AllowedRoots: []string{base}, Home: home})
	wantRefused(t, err, sock)

	// A symlink to a socket elsewhere is not followed: it would resolve
	// inside the container, not to the host's socket.
	l.Close()
	os.Remove(sock)
	other := filepath.Join(base, "other.sock")
	l2, err := net.Listen("unix", other)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if err := os.Symlink(other, filepath.Join(proj, "link.sock")); err != nil {
		t.Fatal(err)
	}
	if _, err := ResolveHostMount(proj, "/workspace", HostMountPolicy{AllowedRoots: []string{base}, Home: home}); err != nil {
		t.Fatalf("symlink to an outside socket: %v", err)
	}
}

func TestResolveHostMountScanBound(t *testing.T) {
	base, home := attackTree(t)
	proj := filepath.Join(home, "proj")
	for i := range 5 {
		if err := os.WriteFile(filepath.Join(proj, "f"+string(rune('a'+i))), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, err := ResolveHostMount(proj, "/workspace", HostMountPolicy{AllowedRoots: []string{base}, MaxScanEntries: 3})
	var ce *errdefs.ConfigError
	if !errors.As(err, &ce) || ce.Key != "workspace.max_scan_entries" || !errors.Is(err, errdefs.ErrRefused) {
		t.Fatalf("err = %v, want a refusal naming workspace.max_scan_entries", err)
	}
}

func TestResolveHostMountOwnerAndGitDir(t *testing.T) {
	base, home := attackTree(t)
	proj := filepath.Join(home, "proj")
	if err := os.MkdirAll(filepath.Join(proj, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, ".git", "config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := ResolveHostMount(proj, "/workspace", HostMountPolicy{AllowedRoots: []string{base}})
	if err != nil {
		t.Fatal(err)
	}
	if !m.OwnerKnown || m.UID != os.Getuid() || m.GID != os.Getgid() {
		t.Errorf("owner = %d:%d known=%v, want %d:%d", m.UID, m.GID, m.OwnerKnown, os.Getuid(), os.Getgid())
	}
	if m.GitDir != filepath.Join(proj, ".git") {
		t.Errorf("GitDir = %q", m.GitDir)
	}
	if err := EnsureHooksDir(m); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Lstat(filepath.Join(proj, ".git", "hooks")); err != nil || !info.IsDir() {
		t.Fatalf("hooks dir not made: %v", err)
	}
	// A .git that is a symlink (pointing anywhere) is not treated as the
	// repository's: nothing podbot mounts may follow it.
	other := filepath.Join(home, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(proj, ".git"), filepath.Join(other, ".git")); err != nil {
		t.Fatal(err)
	}
	_, err = ResolveHostMount(other, "/workspace", HostMountPolicy{AllowedRoots: []string{base}})
	wantRefused(t, err, ".git that is a symlink")
}
