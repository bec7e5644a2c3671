package localclone

import (
	"errors"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestParseLabels(t *testing.T) {
	good := Info{Name: "sb1", Repo: "/home/me/src/app", Base: idA, Branch: "podbot/sb1", Dir: "/work/app"}
	got, ok, err := ParseLabels("sb1", good.Labels())
	if err != nil || !ok || got != good {
		t.Fatalf("ParseLabels = %+v %v %v", got, ok, err)
	}
	if _, ok, err := ParseLabels("sb1", map[string]string{"podbot.managed": "true"}); ok || err != nil {
		t.Errorf("no labels: ok=%v err=%v", ok, err)
	}
	for name, mut := range map[string]func(l map[string]string){
		"relative repo":  func(l map[string]string) { l[LabelRepo] = "src/app" },
		"unclean repo":   func(l map[string]string) { l[LabelRepo] = "/home/../etc" },
		"short base":     func(l map[string]string) { l[LabelBase] = "abc" },
		"other branch":   func(l map[string]string) { l[LabelBranch] = "main" },
		"traversal ref":  func(l map[string]string) { l[LabelBranch] = "podbot/../../x" },
		"root dir":       func(l map[string]string) { l[LabelDir] = "/" },
		"newline in dir": func(l map[string]string) { l[LabelDir] = "/work/a\nb" },
	} {
		l := good.Labels()
		mut(l)
		if _, _, err := ParseLabels("sb1", l); !errors.Is(err, errdefs.ErrRepo) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestDirName(t *testing.T) {
	for in, want := range map[string]string{"/src/app": "app", "/src/my app\x1b": "my_app_", "/src/..": "repo", "/src/.hidden": "hidden"} {
		if got := DirName(in); got != want {
			t.Errorf("DirName(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseLabels(f *testing.F) {
	f.Add("sb1", "/home/me/app", idA, "podbot/sb1", "/work/app")
	f.Add("x", "/a/../b", "zz", "podbot/../../x", "/")
	f.Fuzz(func(t *testing.T, name, repo, base, branch, dir string) {
		info, ok, err := ParseLabels(name, map[string]string{LabelRepo: repo, LabelBase: base, LabelBranch: branch, LabelDir: dir})
		if err != nil || !ok {
			return
		}
		if info.Branch != "podbot/"+name || !isObjectID(info.Base) || !validDir(info.Dir) || info.Repo[0] != '/' {
			t.Fatalf("accepted %+v", info)
		}
		if !sandboxName.MatchString(name) {
			t.Fatalf("accepted name %q", name)
		}
	})
}
