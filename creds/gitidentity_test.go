package creds

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestGitIdentity(t *testing.T) {
	tests := []struct {
		name            string
		values          map[string]string
		fail            bool
		wantName, wantE string
	}{
		{"both", map[string]string{"user.name": "Ada Lovelace\n", "user.email": " ada@example.com "}, false, "Ada Lovelace", "ada@example.com"},
		{"name only", map[string]string{"user.name": "Ada"}, false, "Ada", ""},
		{"newline inside", map[string]string{"user.name": "Ada\nEvil", "user.email": "a@b"}, false, "", "a@b"},
		{"nul inside", map[string]string{"user.name": "Ada\x00", "user.email": "a@b"}, false, "", "a@b"},
		{"too long", map[string]string{"user.name": string(make([]byte, 300))}, false, "", ""},
		{"getter fails", nil, true, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			get := func(key string) (string, error) {
				if tt.fail {
					return "", errors.New("no git")
				}
				return tt.values[key], nil
			}
			n, e := GitIdentity(context.Background(), get)
			if n != tt.wantName || e != tt.wantE {
				t.Errorf("GitIdentity = %q, %q; want %q, %q", n, e, tt.wantName, tt.wantE)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, e := GitIdentity(ctx, func(string) (string, error) { return "x", nil }); n != "" || e != "" {
		t.Error("a canceled context should read nothing")
	}
}

func TestGitConfigFileAndEnv(t *testing.T) {
	got := string(GitConfigFile(`-n"; rm -rf / \`, "a@b"))
	want := "# written by podbot from the host's git identity\n[user]\n\tname = \"-n\\\"; rm -rf / \\\\\"\n\temail = \"a@b\"\n"
	if got != want {
		t.Errorf("GitConfigFile = %q, want %q", got, want)
	}
	if got := GitConfigFile("", "a\nb"); got != nil {
		t.Errorf("empty and invalid values should give no file: %q", got)
	}
	if got := GitConfigFile("Ada", ""); !strings.Contains(string(got), "name = \"Ada\"") || strings.Contains(string(got), "email") {
		t.Errorf("name alone: %q", got)
	}
	env := GitConfigEnv("", "a@b")
	if !reflect.DeepEqual(env, []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=user.email", "GIT_CONFIG_VALUE_0=a@b"}) {
		t.Errorf("GitConfigEnv = %q", env)
	}
	if GitConfigEnv("\x7f", "") != nil {
		t.Error("invalid values should give no environment")
	}
}

// hostileIdentities try to end the [user] section or the quoted value and
// set another key (core.sshCommand, include.path) in the agent's config.
var hostileIdentities = [][2]string{
	{"--Dash Name", "dash@example.com"},
	{`Eve" ; x = "y`, `e@x"] [core] sshCommand = evil #`},
	{`back\slash\`, `"quoted"`},
	{"[include] path = /etc/passwd", "# comment ; semicolon"},
	{"Ünïcødé 名前", "tab\u2028sep@example.com"},
}

// TestGitConfigFileRoundTrip has the host's git read each generated file:
// exactly user.name and user.email come back, with the values unchanged.
func TestGitConfigFileRoundTrip(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, id := range hostileIdentities {
		cfg := filepath.Join(t.TempDir(), "gitconfig")
		if err := os.WriteFile(cfg, GitConfigFile(id[0], id[1]), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("git", "config", "--file", cfg, "--null", "--list").CombinedOutput()
		if err != nil {
			t.Fatalf("git cannot read the file for %q: %v: %s", id, err, out)
		}
		want := "user.name\n" + id[0] + "\x00user.email\n" + id[1] + "\x00"
		if string(out) != want {
			t.Errorf("git read %q for %q, want %q", out, id, want)
		}
	}
}

// TestGitConfigEnvRoundTrip: git reads the identity from the environment
// alone, as in a sandbox with a read-only root filesystem.
func TestGitConfigEnvRoundTrip(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	id := hostileIdentities[1]
	cmd := exec.Command("git", "config", "--get", "user.email")
	cmd.Env = append([]string{"HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "PATH=" + os.Getenv("PATH")}, GitConfigEnv(id[0], id[1])...)
	out, err := cmd.Output()
	if err != nil || strings.TrimSuffix(string(out), "\n") != id[1] {
		t.Errorf("git config --get user.email = %q, %v; want %q", out, err, id[1])
	}
}

// TestHostGitConfigReadsTheHostsIdentity reads a scratch global config
// with the host's git.
func TestHostGitConfigReadsTheHostsIdentity(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cfg := filepath.Join(t.TempDir(), "gitconfig")
	t.Setenv("GIT_CONFIG_GLOBAL", cfg)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("HOME", t.TempDir())
	get := HostGitConfig(context.Background())
	if v, err := get("user.name"); err != nil || v != "" {
		t.Fatalf("unset key = %q, %v; want empty, nil", v, err)
	}
	if err := os.WriteFile(cfg, GitConfigFile("--Dash Name", "dash@example.com"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, e := GitIdentity(context.Background(), get)
	if n != "--Dash Name" || e != "dash@example.com" {
		t.Errorf("round trip = %q, %q", n, e)
	}
	if _, err := get("--evil"); err == nil {
		t.Error("an invalid key must be refused")
	}
}
