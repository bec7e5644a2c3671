package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeSecrets(t *testing.T, origin string) (originPath, tokenPath string) {
	t.Helper()
	dir := t.TempDir()
	originPath, tokenPath = filepath.Join(dir, "git_origin"), filepath.Join(dir, "ghapp_token")
	if origin != "" {
		if err := os.WriteFile(originPath, []byte(origin+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(tokenPath, []byte("ghs_sidecar"), 0o600); err != nil {
		t.Fatal(err)
	}
	return originPath, tokenPath
}

func TestAskpass(t *testing.T) {
	originPath, tokenPath := writeSecrets(t, "https://github.com")
	tests := []struct{ prompt, want string }{
		{"Username for 'https://github.com': ", "x-access-token\n"},
		{"Password for 'https://x-access-token@github.com': ", "ghs_sidecar\n"},
		{"Password for 'https://x-access-token@attacker.example': ", ""},
		{"Password for 'https://github.com@attacker.example': ", ""},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		err := askpass(tt.prompt, originPath, tokenPath, &out)
		if out.String() != tt.want || (err == nil) != (tt.want != "") {
			t.Errorf("askpass(%q) = %q, %v; want %q", tt.prompt, out.String(), err, tt.want)
		}
	}
	noOrigin, tokenPath := writeSecrets(t, "")
	var out bytes.Buffer
	if err := askpass("Password for 'https://github.com': ", noOrigin, tokenPath, &out); err == nil || out.Len() != 0 {
		t.Errorf("askpass without an origin file answered %q, %v", out.String(), err)
	}
}

// TestRunDispatchesPrompts checks that git's prompt as the only argument
// selects the askpass mode (refusing here, as the sandbox's origin file is
// absent on the test host) and is not taken for an unknown command.
func TestRunDispatchesPrompts(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"Password for 'https://x-access-token@attacker.example': "}, &stdout, &stderr)
	if code != 1 || stdout.Len() != 0 || strings.Contains(stderr.String(), "unknown command") {
		t.Errorf("run = %d, stdout %q, stderr %q; want a refusal", code, stdout.String(), stderr.String())
	}
}
