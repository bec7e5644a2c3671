package podbot

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
	sandboximage "github.com/podbot/podbot/images/sandbox"
)

func TestParseAgents(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"claude,codex", []string{"claude", "codex"}, false},
		{" codex , claude,codex", []string{"claude", "codex"}, false},
		{"none", nil, false},
		{"", nil, false},
		{"claude,gemini", []string{"claude", "gemini"}, false},
		{"opencode,droid,goose,claude-acp,codex-acp", []string{"claude-acp", "codex-acp", "droid", "goose", "opencode"}, false},
		{"claude,aider", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseAgents(tt.in)
		if tt.wantErr {
			if !errors.Is(err, errdefs.ErrInvalidValue) {
				t.Errorf("ParseAgents(%q) err = %v, want an invalid value", tt.in, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseAgents(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

const testCert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func TestBuildAgentImage(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "proxy.crt")
	if err := os.WriteFile(ca, []byte(testCert), 0o644); err != nil {
		t.Fatal(err)
	}
	api := &fakeImageAPI{images: map[string]map[string]string{DefaultImage(): nil},
		buildBody: `{"stream":"Successfully built 0123\n"}`}
	opts := AgentImageOptions{Agents: []string{"codex", "claude"}, CACerts: []string{ca}}
	res, err := BuildAgentImage(context.Background(), api, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped || api.builds != 1 || res.Image != DefaultAgentImage() || res.Base != DefaultImage() {
		t.Fatalf("first build: %+v builds=%d", res, api.builds)
	}
	if api.buildOpts.Dockerfile != sandboximage.AgentsContainerfileName {
		t.Errorf("Dockerfile = %q", api.buildOpts.Dockerfile)
	}
	if got := *api.buildOpts.BuildArgs[sandboximage.AgentsArg]; got != "claude codex" {
		t.Errorf("%s = %q", sandboximage.AgentsArg, got)
	}
	if got := *api.buildOpts.BuildArgs[sandboximage.NPMSpecsArg]; got != "@anthropic-ai/claude-code@2.1.330 @openai/codex@0.169.0" {
		t.Errorf("%s = %q", sandboximage.NPMSpecsArg, got)
	}
	if got := *api.buildOpts.BuildArgs[sandboximage.NodeVersionArg]; got != sandboximage.NodeVersion {
		t.Errorf("%s = %q", sandboximage.NodeVersionArg, got)
	}
	if got := api.buildOpts.Labels[sandboximage.AgentVersionsLabel]; got != "claude=2.1.330,codex=0.169.0" {
		t.Errorf("%s = %q", sandboximage.AgentVersionsLabel, got)
	}
	files := tarFiles(t, api.buildCtx)
	for _, want := range []string{sandboximage.AgentsContainerfileName, sandboximage.NestedContainersConfName,
		sandboximage.NestedStorageConfName, "ca/README", "ca/00-proxy.crt"} {
		if _, ok := files[want]; !ok {
			t.Errorf("build context lacks %s (has %v)", want, files)
		}
	}
	if files["ca/00-proxy.crt"] != testCert {
		t.Errorf("CA certificate not copied verbatim")
	}

	// Same inputs: skipped. Other agents: rebuilt.
	res, err = BuildAgentImage(context.Background(), api, opts)
	if err != nil || !res.Skipped || api.builds != 1 {
		t.Fatalf("second build: %+v %v builds=%d", res, err, api.builds)
	}
	opts.Agents = []string{"codex"}
	if res, err = BuildAgentImage(context.Background(), api, opts); err != nil || res.Skipped || api.builds != 2 {
		t.Fatalf("changed agents: %+v %v builds=%d", res, err, api.builds)
	}
}

func TestBuildAgentImageRefusals(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.crt")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		images map[string]map[string]string
		opts   AgentImageOptions
		want   error
	}{
		{"base missing", map[string]map[string]string{}, AgentImageOptions{}, errdefs.ErrNotFound},
		{"unknown agent", map[string]map[string]string{DefaultImage(): nil}, AgentImageOptions{Agents: []string{"x"}}, errdefs.ErrInvalidValue},
		{"not a certificate", map[string]map[string]string{DefaultImage(): nil}, AgentImageOptions{CACerts: []string{notPEM}}, errdefs.ErrInvalidValue},
		{"certificate missing", map[string]map[string]string{DefaultImage(): nil}, AgentImageOptions{CACerts: []string{filepath.Join(dir, "nope.crt")}}, errdefs.ErrFilesystem},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &fakeImageAPI{images: tt.images}
			_, err := BuildAgentImage(context.Background(), api, tt.opts)
			if !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
			if api.builds != 0 {
				t.Errorf("built despite the refusal")
			}
		})
	}
}

func tarFiles(t *testing.T, b []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var buf strings.Builder
		if _, err := io.Copy(&buf, tr); err != nil {
			t.Fatal(err)
		}
		out[h.Name] = buf.String()
	}
}
