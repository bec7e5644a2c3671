package hostflow

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/podbot/podbot/acp"
	"github.com/podbot/podbot/creds"
)

const stderrPEM = "-----BEGIN PRIVATE KEY-----\n" +
	"MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n" +
	"MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu\n" +
	"-----END PRIVATE KEY-----\n"

// TestServeStderrMasksSplitAndMultiLineSecrets plays an agent that writes
// a token to stderr in two writes cut inside it, then a PEM key, then the
// token JSON-escaped: neither the passthrough stream nor the log holds
// any of them.
func TestServeStderrMasksSplitAndMultiLineSecrets(t *testing.T) {
	const token = "ghs_16C7e42F292c6912E7710c838347Ae178B4a"
	agent := func(_ context.Context, _ io.Reader, _, stderr io.Writer) int {
		io.WriteString(stderr, "token: "+token[:10])
		io.WriteString(stderr, token[10:]+"\n")
		for _, line := range strings.SplitAfter(stderrPEM, "\n") {
			io.WriteString(stderr, line)
		}
		io.WriteString(stderr, `{"t":"`+token[:20])
		io.WriteString(stderr, token[20:]+`"}`) // no trailing newline: flushed at exit
		return 0
	}
	body := strings.Split(stderrPEM, "\n")[1]
	leaks := func(s string) bool {
		return strings.Contains(s, token[:16]) || strings.Contains(s, token[16:]) || strings.Contains(s, body[:30])
	}
	for _, mode := range []string{"passthrough", "log"} {
		t.Run(mode, func(t *testing.T) {
			r := creds.NewRedactor(token, stderrPEM)
			var errOut, logBuf bytes.Buffer
			opts := Options{ContainerID: "c", Cmd: []string{"agent"}, Policy: acp.Policy{Mode: acp.ModeACP},
				Stdin: strings.NewReader(""), Stdout: io.Discard, Redactor: r,
				Logger: slog.New(slog.NewTextHandler(&logBuf, nil))}
			if mode == "passthrough" {
				opts.Stderr = &errOut
			}
			if _, err := Serve(context.Background(), &fakeExecer{agent: agent}, opts); err != nil {
				t.Fatal(err)
			}
			got := errOut.String() + logBuf.String()
			if leaks(got) {
				t.Fatalf("stderr leaked a secret:\n%s", got)
			}
			if !strings.Contains(got, creds.Mask) {
				t.Fatalf("nothing masked:\n%s", got)
			}
		})
	}
}
