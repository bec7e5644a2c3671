package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Every workspace flag is applied before the configuration is validated,
// whichever source selected the workspace: a config file or environment that
// says host_mount without a host_path is completed by --workspace, and
// --repo overrides a host_mount from either.
func TestWorkspaceFlagsWithEveryConfigSource(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	hostMountFile := filepath.Join(dir, "hostmount.toml")
	if err := os.WriteFile(hostMountFile, []byte("[workspace]\nsource = \"host_mount\"\nallowed_roots = [\""+dir+"\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cloneFile := filepath.Join(dir, "clone.toml")
	if err := os.WriteFile(cloneFile, []byte("[workspace]\nallowed_roots = [\""+dir+"\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sources := []struct {
		name    string
		file    string
		environ []string
	}{
		{"file host_mount", hostMountFile, nil},
		{"env host_mount", cloneFile, []string{"PODBOT_WORKSPACE_SOURCE=host_mount"}},
		{"default github_clone", cloneFile, nil},
	}
	flags := []struct {
		name       string
		args       []string
		wantSource string
		wantPath   string
	}{
		{"--workspace", []string{"--workspace", proj}, "host_mount", proj},
		{"--repo", []string{"--repo", "acme/widgets"}, "github_clone", ""},
	}
	for _, src := range sources {
		for _, fl := range flags {
			for _, command := range []string{"run", "host"} {
				t.Run(src.name+"/"+command+" "+fl.name, func(t *testing.T) {
					ios, _, _ := testIO()
					f := newFactory(ios, src.environ)
					f.global.configPath = src.file
					var overrides map[string]string
					switch command {
					case "run":
						err := parse(t, newRunCmd(f, func(_ context.Context, o *runOptions) error { overrides = o.configOverrides(); return nil }), fl.args...)
						if err != nil {
							t.Fatal(err)
						}
					case "host":
						args := append([]string{"--agent", "codex", "--agent-mode", "codex_app_server"}, fl.args...)
						if fl.name == "--repo" {
							args = append(args, "--branch", "main")
						}
						err := parse(t, newHostCmd(f, func(_ context.Context, o *hostOptions) error { overrides = o.configOverrides(); return nil }), args...)
						if err != nil {
							t.Fatal(err)
						}
					}
					loaded, err := f.config(overrides)
					if err != nil {
						t.Fatalf("config with %s: %v", fl.name, err)
					}
					w := loaded.Config.Workspace
					if w.Source != fl.wantSource || w.HostPath != fl.wantPath {
						t.Errorf("workspace = %s %q, want %s %q", w.Source, w.HostPath, fl.wantSource, fl.wantPath)
					}
					if got := loaded.Sources["workspace.source"]; got != fl.name {
						t.Errorf("workspace.source from %q, want %s", got, fl.name)
					}
				})
			}
		}
	}
}

// A relative --workspace is made absolute before it reaches the
// configuration, for run and host alike.
func TestWorkspaceFlagIsMadeAbsolute(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := parse(t, newRunCmd(nil, func(_ context.Context, o *runOptions) error { got = o.workspace; return nil }), "--workspace", "sub"); err != nil {
		t.Fatal(err)
	}
	if got != filepath.Join(wd, "sub") {
		t.Errorf("run --workspace sub = %q", got)
	}
	if err := parse(t, newHostCmd(nil, func(_ context.Context, o *hostOptions) error { got = o.workspace; return nil }), "--workspace", "sub"); err != nil {
		t.Fatal(err)
	}
	if got != filepath.Join(wd, "sub") {
		t.Errorf("host --workspace sub = %q", got)
	}
}
