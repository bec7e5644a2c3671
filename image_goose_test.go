package podbot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
	sandboximage "github.com/podbot/podbot/images/sandbox"
)

// fakeGoose is a stand-in Goose executable: a script, so tests need no
// real release.
const fakeGoose = "#!/bin/sh\necho goose 0.0.0-test\n"

type tarEntry struct {
	name     string
	body     string
	typeflag byte
}

func makeTar(t testing.TB, entries []tarEntry, gz bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o755, Size: int64(len(e.body)), Typeflag: e.typeflag}
		if e.typeflag == tar.TypeSymlink {
			hdr.Size, hdr.Linkname = 0, "/etc/passwd"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if !gz {
		return buf.Bytes()
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	_, _ = zw.Write(buf.Bytes())
	_ = zw.Close()
	return z.Bytes()
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// writeGooseRelease writes a fake release archive laid out like the
// upstream Linux ones and returns its path and sha256.
func writeGooseRelease(t *testing.T) (string, string) {
	t.Helper()
	data := makeTar(t, []tarEntry{
		{name: "goose-package/", typeflag: tar.TypeDir},
		{name: "goose-package/README.md", body: "readme", typeflag: tar.TypeReg},
		{name: "goose-package/goose", body: fakeGoose, typeflag: tar.TypeReg},
	}, true)
	p := filepath.Join(t.TempDir(), "goose-x86_64-unknown-linux-gnu.tar.gz")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, sha(data)
}

// TestBuildAgentImageGoose: a pinned local artifact puts its goose
// executable in the build context, goose in the agents list and its
// version in the label; --tag leaves the default tags alone.
func TestBuildAgentImageGoose(t *testing.T) {
	p, sum := writeGooseRelease(t)
	api := &fakeImageAPI{images: map[string]map[string]string{DefaultImage(): nil},
		buildBody: `{"stream":"Successfully built 0123\n"}`}
	opts := AgentImageOptions{Agents: []string{"opencode"}, Tag: "localhost/podbot-agent-test:1",
		Goose: &GooseArtifact{Source: p, SHA256: sum, Version: "1.9.0"}}
	res, err := BuildAgentImage(context.Background(), api, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Image != opts.Tag || len(api.buildOpts.Tags) != 1 || api.buildOpts.Tags[0] != opts.Tag {
		t.Errorf("image %s tags %v, want only %s", res.Image, api.buildOpts.Tags, opts.Tag)
	}
	if got := *api.buildOpts.BuildArgs[sandboximage.AgentsArg]; got != "goose opencode" {
		t.Errorf("%s = %q", sandboximage.AgentsArg, got)
	}
	if got := *api.buildOpts.BuildArgs[sandboximage.NPMSpecsArg]; got != "opencode-ai@1.18.33" {
		t.Errorf("%s = %q", sandboximage.NPMSpecsArg, got)
	}
	if got := api.buildOpts.Labels[sandboximage.AgentVersionsLabel]; got != "goose=1.9.0,opencode=1.18.33" {
		t.Errorf("label %q", got)
	}
	files := tarFiles(t, api.buildCtx)
	if files["goose/goose"] != fakeGoose {
		t.Errorf("build context goose/goose = %q", files["goose/goose"])
	}
	// Same inputs: skipped. Another artifact: rebuilt.
	if res, err := BuildAgentImage(context.Background(), api, opts); err != nil || !res.Skipped {
		t.Errorf("second build: %+v, %v; want skipped", res, err)
	}
	raw := []byte("#!/bin/sh\necho other\n")
	p2 := filepath.Join(t.TempDir(), "goose")
	if err := os.WriteFile(p2, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	opts.Goose = &GooseArtifact{Source: p2, SHA256: sha(raw), Version: "1.9.1"}
	if res, err := BuildAgentImage(context.Background(), api, opts); err != nil || res.Skipped || tarFiles(t, api.buildCtx)["goose/goose"] != string(raw) {
		t.Errorf("bare executable artifact: %+v, %v", res, err)
	}
}

// TestBuildAgentImageGooseRefused: a wrong sha256, goose without an
// artifact and bad flags build nothing.
func TestBuildAgentImageGooseRefused(t *testing.T) {
	p, sum := writeGooseRelease(t)
	other := strings.Repeat("0", 64)
	for _, tt := range []struct {
		name   string
		opts   AgentImageOptions
		key    string
		reason error
	}{
		{"sha mismatch", AgentImageOptions{Goose: &GooseArtifact{Source: p, SHA256: other, Version: "1"}}, "--goose-sha256", errdefs.ErrConflict},
		{"no artifact", AgentImageOptions{Agents: []string{"goose"}}, "--agents", errdefs.ErrMissingRequired},
		{"uppercase sha", AgentImageOptions{Goose: &GooseArtifact{Source: p, SHA256: strings.ToUpper(sum), Version: "1"}}, "--goose-sha256", errdefs.ErrInvalidValue},
		{"short sha", AgentImageOptions{Goose: &GooseArtifact{Source: p, SHA256: "abc", Version: "1"}}, "--goose-sha256", errdefs.ErrInvalidValue},
		{"bad version", AgentImageOptions{Goose: &GooseArtifact{Source: p, SHA256: sum, Version: "1 2"}}, "--goose-version", errdefs.ErrInvalidValue},
		{"plain http", AgentImageOptions{Goose: &GooseArtifact{Source: "http://example.com/goose.tar.bz2", SHA256: sum, Version: "1"}}, "--goose-artifact", errdefs.ErrInvalidValue},
		{"url credentials", AgentImageOptions{Goose: &GooseArtifact{Source: "https://u:p@example.com/goose", SHA256: sum, Version: "1"}}, "--goose-artifact", errdefs.ErrInvalidValue},
		{"bad tag", AgentImageOptions{Tag: "Not A Tag"}, "--tag", errdefs.ErrInvalidValue},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := &fakeImageAPI{images: map[string]map[string]string{DefaultImage(): nil}}
			_, err := BuildAgentImage(context.Background(), api, tt.opts)
			var ce *errdefs.ConfigError
			if !errors.As(err, &ce) || ce.Key != tt.key || !errors.Is(err, tt.reason) {
				t.Fatalf("err = %v, want a %v config error on %s", err, tt.reason, tt.key)
			}
			if strings.Contains(err.Error(), "u:p") {
				t.Errorf("error shows URL credentials: %v", err)
			}
			if api.builds != 0 {
				t.Errorf("a refused artifact was built")
			}
		})
	}
}

// TestGooseArtifactHTTPS fetches over https and keeps the URL's query
// (a possible download token) out of the error.
func TestGooseArtifactHTTPS(t *testing.T) {
	data := makeTar(t, []tarEntry{{name: "goose", body: fakeGoose, typeflag: tar.TypeReg}}, false)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/goose.tar" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	defer srv.Close()
	bin, err := gooseBinary(context.Background(), GooseArtifact{Source: srv.URL + "/goose.tar?token=s3cr3t", SHA256: sha(data), Version: "1"}, srv.Client())
	if err != nil || string(bin) != fakeGoose {
		t.Fatalf("https artifact: %q, %v", bin, err)
	}
	_, err = gooseBinary(context.Background(), GooseArtifact{Source: srv.URL + "/goose.tar?token=s3cr3t", SHA256: strings.Repeat("1", 64), Version: "1"}, srv.Client())
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("mismatch error %v; want one without the query", err)
	}
	if _, err = gooseBinary(context.Background(), GooseArtifact{Source: srv.URL + "/missing", SHA256: sha(data), Version: "1"}, srv.Client()); !errors.Is(err, errdefs.ErrConnectionFailed) {
		t.Errorf("404: %v", err)
	}
}

// TestExtractGooseHostileArchives: only a regular file named goose is
// taken; links, several candidates and non-archives are refused.
func TestExtractGooseHostileArchives(t *testing.T) {
	for _, tt := range []struct {
		name    string
		raw     []byte
		want    string
		wantErr string
	}{
		{"symlink ignored", makeTar(t, []tarEntry{{name: "goose", typeflag: tar.TypeSymlink}, {name: "bin/goose", body: fakeGoose, typeflag: tar.TypeReg}}, true), fakeGoose, ""},
		{"only a symlink", makeTar(t, []tarEntry{{name: "goose", typeflag: tar.TypeSymlink}}, false), "", "no regular file"},
		{"two", makeTar(t, []tarEntry{{name: "a/goose", body: "1", typeflag: tar.TypeReg}, {name: "b/goose", body: "2", typeflag: tar.TypeReg}}, false), "", "more than one"},
		{"traversal name", makeTar(t, []tarEntry{{name: "../../goose", body: fakeGoose, typeflag: tar.TypeReg}}, false), fakeGoose, ""},
		{"elf", []byte("\x7fELF\x02\x01\x01rest"), "\x7fELF\x02\x01\x01rest", ""},
		{"garbage", []byte("PK\x03\x04zip"), "", "neither"},
		{"bad gzip", []byte{0x1f, 0x8b, 0, 0}, "", "gzip"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := extractGoose(tt.raw)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %q, %v", got, err)
			}
		})
	}
}

func FuzzExtractGoose(f *testing.F) {
	f.Add(makeTar(f, []tarEntry{{name: "goose", body: fakeGoose, typeflag: tar.TypeReg}}, false))
	f.Add(makeTar(f, []tarEntry{{name: "x/goose", body: fakeGoose, typeflag: tar.TypeReg}}, true))
	f.Add([]byte("BZh91AY&SY"))
	f.Add([]byte("#!/bin/sh\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := extractGoose(raw)
		if err == nil && len(got) > maxGooseBinary {
			t.Fatalf("returned %d bytes", len(got))
		}
	})
}
