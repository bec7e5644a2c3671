package podbot

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/gitcred"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/workspace"
)

// TestClaimedMemberTokenTarget: the token daemon finds a claimed pool
// member's token directory by the member name it records, and its scope
// (repository, origin) in the scope file the claim wrote; an unclaimed
// member is skipped, and a claimed one without a readable scope is refused
// rather than given a token with the installation's full grant.
func TestClaimedMemberTokenTarget(t *testing.T) {
	rt := t.TempDir()
	if err := os.MkdirAll(filepath.Join(rt, "podbot"), 0o700); err != nil {
		t.Fatal(err)
	}
	member := "podbot-pool-a-0123456789ab"
	labels := map[string]string{launchplan.LabelGitHubToken: "true", LabelTokenDir: member}
	if !memberTokenUnclaimed(member, labels) || memberTokenUnclaimed("mybox", labels) {
		t.Fatal("memberTokenUnclaimed")
	}
	if _, err := tokenTarget("mybox", labels, rt); !errors.Is(err, errdefs.ErrRefused) {
		t.Fatalf("no scope file: %v, want a refusal", err)
	}
	if err := writeTokenScope(rt, member, tokenScope{Repo: "octo-org/demo", Origin: "https://git.example:8443"}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(rt, "podbot", member+".scope"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("scope file: %v %v", st, err)
	}
	tg, err := tokenTarget("mybox", labels, rt)
	if err != nil || tg.ID != "mybox" || tg.DirName != member || len(tg.Repositories) != 1 || tg.Repositories[0] != "demo" ||
		tg.GitOrigin.String() != "https://git.example:8443" {
		t.Fatalf("%+v %v", tg, err)
	}
	// A bad scope file is refused.
	if err := os.WriteFile(filepath.Join(rt, "podbot", member+".scope"), []byte(`{"repo":"../x","origin":"https://h"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := tokenTarget("mybox", labels, rt); !errors.Is(err, errdefs.ErrRefused) {
		t.Fatalf("bad scope file: %v, want a refusal", err)
	}
	// Removal takes the directory and the scope file.
	if err := os.MkdirAll(filepath.Join(rt, "podbot", member), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := removeMemberToken(rt, labels); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{member, member + ".scope"} {
		if _, err := os.Stat(filepath.Join(rt, "podbot", p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left: %v", p, err)
		}
	}
	if err := removeMemberToken(rt, map[string]string{LabelTokenDir: "../etc"}); err != nil {
		t.Fatalf("a bad label: %v", err)
	}
}

// TestHardeningTokenMount: the token directory's host path, named after
// the sandbox, is compared by shape; its presence is not.
func TestHardeningTokenMount(t *testing.T) {
	plan := func(name string) launchplan.Plan {
		p := launchplan.Plan{Labels: map[string]string{}}
		if name != "" {
			if err := p.Apply(launchplan.WithTokenMount("/run/user/1000/podbot/" + name + "/" + launchplan.TokenFileName)); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	if d := hardeningOf(plan("podbot-pool-a-0123456789ab")).differences(hardeningOf(plan("mybox"))); len(d) != 0 {
		t.Errorf("token directories of two names differ in %v", d)
	}
	if d := hardeningOf(plan("mybox")).differences(hardeningOf(plan(""))); len(d) != 1 || d[0] != "mounts" {
		t.Errorf("a token mount against none: %v, want mounts", d)
	}
}

// FuzzParseTokenScope: whatever a scope file holds, parsing never panics,
// and what it accepts names a repository and an origin that check out.
func FuzzParseTokenScope(f *testing.F) {
	f.Add([]byte(`{"repo":"octo-org/demo","origin":"https://github.com"}`))
	f.Add([]byte(`{"repo":"../x","origin":"https://h"}`))
	f.Add([]byte(`{"repo":"a/b","origin":"file:///etc"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseTokenScope(data)
		if err != nil {
			return
		}
		if _, err := workspace.ParseRepo(s.Repo); err != nil {
			t.Fatalf("accepted repository %q: %v", s.Repo, err)
		}
		if _, err := gitcred.ReadOriginString(s.Origin); err != nil {
			t.Fatalf("accepted origin %q: %v", s.Origin, err)
		}
	})
}
