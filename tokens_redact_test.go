package podbot

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/gitcred"
)

// TestLaunchTokenIsRegisteredWithRedactor: the installation token Launch
// mints (prepareToken), and every refresh after it, is known to the
// redactor the run and host flows log and mask stderr through.
func TestLaunchTokenIsRegisteredWithRedactor(t *testing.T) {
	runtime := t.TempDir()
	if err := os.Chmod(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	r := creds.NewRedactor()
	src := &countingSource{}
	sb := &Sandbox{}
	opts := LaunchOptions{RuntimeDir: runtime, TokenSource: src, Redactor: r, Repo: "octo/demo"}
	origin, err := gitcred.ParseOrigin("https://github.com/")
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.prepareToken(context.Background(), opts, "podbot-redact-test", "", origin, nil, "", slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(sb.token.Dir(), "ghapp_token"))
	if err != nil {
		t.Fatal(err)
	}
	first := strings.TrimSpace(string(data))
	if got := r.Redact("token " + first); strings.Contains(got, first) {
		t.Fatalf("the first token is not masked: %q", got)
	}
	// A refresh goes through the same source.
	refreshed, err := RedactingTokenSource(src, r).InstallationToken(context.Background(), []string{"demo"})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Redact(refreshed.Value); got != creds.Mask {
		t.Fatalf("a refreshed token is not masked: %q", got)
	}
}
