package workspace

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestCloneCommands(t *testing.T) {
	repo := Repo{"octocat", "hello-world"}
	got, err := CloneCommands(repo, "feature/x", "/work", "")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"git", "-c", "credential.helper=", "clone", "--branch", "feature/x", "--", "https://github.com/octocat/hello-world.git", "/work/hello-world"},
		{"git", "-C", "/work/hello-world", "rev-parse", "--abbrev-ref", "HEAD"},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("CloneCommands =\n%q\nwant\n%q", got, want)
	}
	if CloneDir(repo, "/work") != "/work/hello-world" {
		t.Errorf("CloneDir = %q", CloneDir(repo, "/work"))
	}
}

func TestCloneURL(t *testing.T) {
	repo := Repo{"o", "r"}
	tests := []struct {
		base, want string
		wantErr    bool
	}{
		{base: "", want: "https://github.com/o/r.git"},
		{base: "https://ghe.example.com", want: "https://ghe.example.com/o/r.git"},
		{base: "https://ghe.example.com/git/", want: "https://ghe.example.com/git/o/r.git"},
		{base: "http://127.0.0.1:8080/", want: "http://127.0.0.1:8080/o/r.git"},
		{base: "https://x-access-token:ghs_secret@github.com/", wantErr: true},
		{base: "ghs_secret@github.com", wantErr: true},
		{base: "ssh://git@github.com/", wantErr: true},
		{base: "file:///srv/repos", wantErr: true},
		{base: "https:///nohost", wantErr: true},
		{base: "https://github.com/?a=b", wantErr: true},
		{base: "https://github.com/#frag", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.base, func(t *testing.T) {
			got, err := CloneURL(repo, tt.base)
			if tt.wantErr {
				var ce *errdefs.ConfigError
				if !errors.As(err, &ce) || ce.Key != "github.clone_base_url" {
					t.Fatalf("error = %v, want ConfigError github.clone_base_url", err)
				}
				if strings.Contains(err.Error(), "ghs_secret") {
					t.Errorf("error leaks the credential: %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("CloneURL = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := CloneURL(Repo{"bad owner", "r"}, ""); err == nil {
		t.Error("CloneURL accepted a hand-built invalid repo")
	}
}

func TestCloneCommandsRefusesBadInput(t *testing.T) {
	repo := Repo{"o", "r"}
	tests := []struct {
		branch, base, key string
	}{
		{branch: "--upload-pack=evil", base: "/work", key: "branch"},
		{branch: "a..b", base: "/work", key: "branch"},
		{branch: "main", base: "work", key: "workspace.base_dir"},
		{branch: "main", base: "/", key: "workspace.base_dir"},
		{branch: "main", base: "/work/../etc", key: "workspace.base_dir"},
		{branch: "main", base: "", key: "workspace.base_dir"},
	}
	for _, tt := range tests {
		_, err := CloneCommands(repo, tt.branch, tt.base, "")
		var ce *errdefs.ConfigError
		if !errors.As(err, &ce) || ce.Key != tt.key {
			t.Errorf("CloneCommands(%q, %q) error = %v, want key %s", tt.branch, tt.base, err, tt.key)
		}
	}
}

func TestCloneEnv(t *testing.T) {
	if got := CloneEnv(""); !slices.Equal(got, []string{"GIT_ASKPASS=" + DefaultAskpassPath, "GIT_TERMINAL_PROMPT=0"}) {
		t.Errorf("CloneEnv = %q", got)
	}
	if got := CloneEnv("/opt/askpass"); got[0] != "GIT_ASKPASS=/opt/askpass" {
		t.Errorf("CloneEnv = %q", got)
	}
}

func TestCheckHEAD(t *testing.T) {
	if err := CheckHEAD("feature/x\n", "feature/x"); err != nil {
		t.Errorf("CheckHEAD matching = %v", err)
	}
	err := CheckHEAD("main\n", "feature/x")
	if !errors.Is(err, errdefs.ErrContainer) || !errors.Is(err, errdefs.ErrExecFailed) || !strings.Contains(err.Error(), "feature/x") {
		t.Errorf("CheckHEAD mismatch = %v", err)
	}
}
