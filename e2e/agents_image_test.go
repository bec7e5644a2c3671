//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The ACP agents' tests run an agent image of their own, built from the
// sandbox image with the ACP agents only (not the interactive Claude Code
// and Codex CLIs of the default agent image) and a stand-in Goose
// (testdata/fake-goose.sh) installed through --goose-artifact. It is tagged
// apart from localhost/podbot-agent so the default image other tests use
// is never touched, and podbot skips the build while its inputs (the
// Containerfile, the pinned versions, the Goose archive's bytes) are
// unchanged, so only the first run on an engine pays for it.

// acpImage is the ACP agents' test image.
const acpImage = "localhost/podbot-agent-acp-e2e:latest"

// acpImageAgents are the agent CLIs it holds.
const acpImageAgents = "opencode,droid,claude-acp,codex-acp,gemini"

// fakeGooseVersion is the version recorded for the stand-in Goose.
const fakeGooseVersion = "0.0.0-podbot-e2e"

var acpImageBuilt sync.Map // engine name -> *acpImageOnce

type acpImageOnce struct {
	once sync.Once
	err  string
}

// fakeGooseRelease packs testdata/fake-goose.sh like an upstream Linux
// release (a gzip-compressed tar holding goose-package/goose), with fixed
// metadata so the same script always gives the same bytes and sha256.
func fakeGooseRelease(t *testing.T) (string, string) {
	t.Helper()
	script, err := os.ReadFile("testdata/fake-goose.sh")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.ModTime = time.Unix(0, 0)
	tw := tar.NewWriter(zw)
	for _, h := range []*tar.Header{
		{Name: "goose-package/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: time.Unix(0, 0)},
		{Name: "goose-package/goose", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(script)), ModTime: time.Unix(0, 0)},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tw.Write(script); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "goose-x86_64-unknown-linux-gnu.tar.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return p, hex.EncodeToString(sum[:])
}

// ensureACPImage builds acpImage on engine e once per run (podbot skips it
// when current) and fails the test if that build failed.
func ensureACPImage(t *testing.T, e engineUnderTest) {
	t.Helper()
	v, _ := acpImageBuilt.LoadOrStore(e.Name, &acpImageOnce{})
	o := v.(*acpImageOnce)
	o.once.Do(func() {
		art, sum := fakeGooseRelease(t)
		args := []string{"--engine-socket", e.Endpoint, "image", "build", "--bootstrap", "--agents", acpImageAgents,
			"--goose-artifact", art, "--goose-sha256", sum, "--goose-version", fakeGooseVersion, "--tag", acpImage}
		certs, _ := filepath.Glob("/usr/local/share/ca-certificates/*.crt")
		for _, c := range certs {
			args = append(args, "--ca-cert", c)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		start := time.Now()
		cmd := exec.CommandContext(ctx, filepath.Join(suite.bin, "podbot"), args...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			o.err = err.Error() + "\n" + tail(string(out), 4000)
			return
		}
		t.Logf("%s: %s ready in %s: %s", e.Name, acpImage, time.Since(start).Round(time.Second), lastLine(string(out)))
	})
	if o.err != "" {
		t.Fatalf("build %s on %s: %s", acpImage, e.Name, o.err)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestACPImageBuild builds the ACP agents' image on each engine (the other
// agent tests reuse it) and checks its agent-versions label.
func TestACPImageBuild(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ensureACPImage(t, e)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		info, err := e.API.ImageInspect(ctx, acpImage)
		if err != nil {
			t.Fatal(err)
		}
		got := info.Config.Labels["podbot.agent-versions"]
		for _, want := range []string{"goose=" + fakeGooseVersion, "opencode=", "droid=", "claude-acp=", "codex-acp=", "gemini="} {
			if !strings.Contains(got, want) {
				t.Errorf("podbot.agent-versions = %q, lacks %q", got, want)
			}
		}
	})
}
