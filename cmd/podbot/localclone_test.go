package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/podbot/podbot/config"
)

func TestIsLocalRepo(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "src", "my_app!"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "acme", "widgets"), 0o755); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]bool{
		"":               false,
		"acme/widgets":   false, // a valid OWNER/NAME stays GitHub even if a directory matches
		"octocat/hello":  false,
		"/abs/path":      true,
		".":              true,
		"./acme/widgets": true,
		"../x":           true,
		"~/src/app":      true,
		"src/my_app!":    true, // not an OWNER/NAME, but a directory
		"src/missing!":   false,
	} {
		if got := isLocalRepo(in); got != want {
			t.Errorf("isLocalRepo(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestLocalCloneFlagOptions(t *testing.T) {
	l := localCloneFlags{base: "v1", dirty: true}
	o, err := l.options("~/src/app", "/home/me")
	if err != nil || o == nil || o.Path != "/home/me/src/app" || o.Base != "v1" || !o.Dirty {
		t.Fatalf("options = %+v, %v", o, err)
	}
	if _, err := l.options("acme/widgets", "/home/me"); err == nil {
		t.Error("--base and --dirty with OWNER/NAME accepted")
	}
	if o, err := (&localCloneFlags{}).options("acme/widgets", ""); o != nil || err != nil {
		t.Errorf("OWNER/NAME: %+v %v", o, err)
	}
	if _, err := (&localCloneFlags{}).options("~/x", ""); err == nil {
		t.Error("~ without HOME accepted")
	}
	if _, err := (&localCloneFlags{depth: -1}).options("/src/app", ""); err == nil {
		t.Error("--depth -1 accepted")
	}
	if o, err := (&localCloneFlags{depth: 3}).options("/src/app", ""); err != nil || o.Depth != 3 {
		t.Errorf("--depth 3: %+v %v", o, err)
	}
	m := map[string]string{}
	workspaceOverrides(m, "", "/src/app")
	if m["workspace.source"] != config.SourceLocalClone {
		t.Errorf("overrides %v", m)
	}
}
