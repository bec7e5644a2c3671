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

// fakeSidecar writes a stand-in for podbot-sidecar that records the
// prompt it was handed and answers like the real one would for an allowed
// origin.
func fakeSidecar(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "podbot-sidecar")
	script := "#!/bin/sh\n" +
		"[ $# -eq 1 ] || { echo \"want one argument, got $#\" >&2; exit 3; }\n" +
		"case \"$1\" in Username*) echo x-access-token ;; Password*) echo ghs_fromsidecar ;; esac\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
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
	sidecar := fakeSidecar(t)
	dir := t.TempDir()
	// A token file where the old helper read it: the helper must not
	// answer from it by itself.
	tokenFile := filepath.Join(dir, "ghapp_token")
	if err := os.WriteFile(tokenFile, []byte("ghs_fromfile"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, sidecar, prompt string
		wantOut, wantErr      string
		wantFail              bool
	}{
		{name: "username through sidecar", sidecar: sidecar, prompt: "Username for 'https://github.com': ", wantOut: "x-access-token\n"},
		{name: "password through sidecar", sidecar: sidecar, prompt: "Password for 'https://x-access-token@github.com': ", wantOut: "ghs_fromsidecar\n"},
		{name: "password without sidecar", sidecar: filepath.Join(dir, "missing"), prompt: "Password for 'https://github.com': ", wantFail: true, wantErr: "no podbot-sidecar"},
		{name: "username without sidecar", sidecar: filepath.Join(dir, "missing"), prompt: "Username for 'https://github.com': ", wantFail: true, wantErr: "no podbot-sidecar"},
		{name: "sidecar not executable", sidecar: tokenFile, prompt: "Password: ", wantFail: true, wantErr: "no podbot-sidecar"},
		{name: "unexpected prompt", sidecar: sidecar, prompt: "Are you sure? ", wantFail: true, wantErr: "unexpected prompt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("sh", script, tt.prompt)
			cmd.Env = []string{"PODBOT_SIDECAR=" + tt.sidecar, "PODBOT_TOKEN_FILE=" + tokenFile, "PATH=/usr/bin:/bin"}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if tt.wantFail != (err != nil) {
				t.Fatalf("run error %v, want failure %v (stderr %q)", err, tt.wantFail, stderr.String())
			}
			if stdout.String() != tt.wantOut {
				t.Errorf("stdout = %q, want %q", stdout.String(), tt.wantOut)
			}
			if !strings.Contains(stderr.String(), tt.wantErr) || strings.Contains(stdout.String()+stderr.String(), "ghs_fromfile") {
				t.Errorf("stderr = %q, want %q and no token read by the helper itself", stderr.String(), tt.wantErr)
			}
		})
	}
}

// TestAskpassWithGit lets the host's git ask the helper, so the prompts
// are git's own and reach the sidecar whole.
func TestAskpassWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	script := writeScript(t)
	cmd := exec.Command("git", "credential", "fill")
	cmd.Stdin = strings.NewReader("protocol=https\nhost=github.example\n\n")
	cmd.Env = []string{"GIT_ASKPASS=" + script, "PODBOT_SIDECAR=" + fakeSidecar(t), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git credential fill: %v", err)
	}
	if !strings.Contains(string(out), "username=x-access-token\n") || !strings.Contains(string(out), "password=ghs_fromsidecar\n") {
		t.Errorf("git got %q", out)
	}
}
