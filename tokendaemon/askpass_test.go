package tokendaemon

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func writeScript(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "podbot-askpass")
	if err := os.WriteFile(p, AskpassScript, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAskpassScript(t *testing.T) {
	onDisk, err := os.ReadFile("askpass.sh")
	if err != nil || !bytes.Equal(onDisk, AskpassScript) || !bytes.HasPrefix(AskpassScript, []byte("#!/bin/sh\n")) {
		t.Fatalf("embedded script differs from askpass.sh or lacks a #!/bin/sh line (%v)", err)
	}
	script := writeScript(t)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "ghapp_token")
	tests := []struct {
		name, content, prompt string
		noFile                bool
		wantOut, wantErr      string
		wantFail              bool
	}{
		{name: "username", prompt: "Username for 'https://github.com': ", noFile: true, wantOut: "x-access-token\n"},
		{name: "password", content: "ghs_abc123", prompt: "Password for 'https://x-access-token@github.com': ", wantOut: "ghs_abc123\n"},
		{name: "password with newline", content: "ghs_abc123\n", prompt: "Password for 'https://github.com': ", wantOut: "ghs_abc123\n"},
		{name: "only first line", content: "ghs_abc123\nextra\n", prompt: "Password: ", wantOut: "ghs_abc123\n"},
		{name: "missing file", prompt: "Password: ", noFile: true, wantFail: true, wantErr: "cannot read the GitHub token file"},
		{name: "empty file", content: "", prompt: "Password: ", wantFail: true, wantErr: "is empty"},
		{name: "unexpected prompt", content: "ghs_abc123", prompt: "Are you sure? ", wantFail: true, wantErr: "unexpected prompt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = os.Remove(tokenFile)
			if !tt.noFile {
				if err := os.WriteFile(tokenFile, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("sh", script, tt.prompt)
			cmd.Env = []string{"PODBOT_TOKEN_FILE=" + tokenFile, "PATH=/usr/bin:/bin"}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if tt.wantFail != (err != nil) {
				t.Fatalf("run error %v, want failure %v (stderr %q)", err, tt.wantFail, stderr.String())
			}
			if stdout.String() != tt.wantOut {
				t.Errorf("stdout = %q, want %q", stdout.String(), tt.wantOut)
			}
			if !strings.Contains(stderr.String(), tt.wantErr) || strings.Contains(stderr.String(), "ghs_") {
				t.Errorf("stderr = %q, want %q and no token", stderr.String(), tt.wantErr)
			}
		})
	}
}

// TestAskpassWithGit lets the host's git ask the helper, so the prompts
// are git's own.
func TestAskpassWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	script := writeScript(t)
	tokenFile := filepath.Join(t.TempDir(), "ghapp_token")
	if err := os.WriteFile(tokenFile, []byte("ghs_fromfile"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "credential", "fill")
	cmd.Stdin = strings.NewReader("protocol=https\nhost=github.example\n\n")
	cmd.Env = []string{"GIT_ASKPASS=" + script, "PODBOT_TOKEN_FILE=" + tokenFile, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git credential fill: %v", err)
	}
	if !strings.Contains(string(out), "username=x-access-token\n") || !strings.Contains(string(out), "password=ghs_fromfile\n") {
		t.Errorf("git got %q", out)
	}
}
