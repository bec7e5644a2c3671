package creds

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
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

func TestGitConfigCommands(t *testing.T) {
	got := GitConfigCommands("-n; rm -rf /", "a@b")
	want := [][]string{
		{"git", "config", "--global", "--", "user.name", "-n; rm -rf /"},
		{"git", "config", "--global", "--", "user.email", "a@b"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GitConfigCommands = %q, want %q", got, want)
	}
	if got := GitConfigCommands("", "a\nb"); len(got) != 0 {
		t.Errorf("empty and invalid values should give no commands: %q", got)
	}
}

// TestHostGitConfigRoundTrip runs the commands against a scratch global
// config with the host's git, and reads the values back.
func TestHostGitConfigRoundTrip(t *testing.T) {
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
	for _, argv := range GitConfigCommands("--Dash Name", "dash@example.com") {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%q: %v: %s", argv, err, out)
		}
	}
	n, e := GitIdentity(context.Background(), get)
	if n != "--Dash Name" || e != "dash@example.com" {
		t.Errorf("round trip = %q, %q", n, e)
	}
	if _, err := get("--evil"); err == nil {
		t.Error("an invalid key must be refused")
	}
	if _, err := os.Stat(cfg); err != nil {
		t.Errorf("commands did not write the scratch config: %v", err)
	}
}
