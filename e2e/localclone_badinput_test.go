//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLocalCloneBadInput gives each engine what local_clone must refuse:
// --repo of a plain directory, a bare repository, a repository with no
// commits, a detached HEAD; diff of an unknown sandbox, of one made
// without a repository and of one made from another repository; apply on
// a dirty host. Each is a clear error with its exit status, and nothing
// changed on either side.
func TestLocalCloneBadInput(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		h := newLCHost(t)
		plain := t.TempDir()
		bare := filepath.Join(t.TempDir(), "bare.git")
		h.git(t, "init", "-q", "--bare", bare)
		empty := filepath.Join(t.TempDir(), "empty")
		h.git(t, "init", "-q", empty)
		detached := newLCHost(t)
		detached.git(t, "-C", detached.dir, "checkout", "-q", "--detach")

		for _, c := range []struct {
			purpose, path, want string
			extra               []string
		}{
			{"lc-plain", plain, "is not a git repository", nil},
			{"lc-bare", bare, "is a bare repository", nil},
			{"lc-empty", empty, "has no commits yet", nil},
			{"lc-detached", detached.dir, "HEAD is detached", nil},
			{"lc-badbase", h.dir, "names no commit", []string{"--base", "no-such-branch"}},
		} {
			name := testName(e, c.purpose)
			removeOnCleanup(t, e, name)
			r := h.podbot(t, ctx, e, append([]string{"create", "--name", name, "--repo", c.path}, c.extra...)...)
			if r.Code != 7 || !strings.Contains(r.Stderr, c.want) {
				t.Errorf("create --repo %s: exit %d, want 7 and %q\n%s", c.path, r.Code, c.want, r.Stderr)
			}
			if rows := containersNamed(t, ctx, e, name); len(rows) != 0 {
				t.Errorf("create --repo %s left %d container(s)", c.path, len(rows))
			}
		}
		if got := detached.git(t, "-C", detached.dir, "for-each-ref"); strings.Contains(got, "podbot") {
			t.Errorf("a refused create left refs: %s", got)
		}

		if r := h.podbot(t, ctx, e, "diff", testName(e, "lc-nosuch")); r.Code != 4 || !strings.Contains(r.Stderr, "no container") {
			t.Errorf("diff of an unknown sandbox: exit %d\n%s", r.Code, r.Stderr)
		}
		plainSB := createSandbox(t, ctx, e, "lc-norepo")
		if r := h.podbot(t, ctx, e, "diff", plainSB); r.Code != 7 || !strings.Contains(r.Stderr, "was not made from a local repository") {
			t.Errorf("diff of a sandbox without a repository: exit %d\n%s", r.Code, r.Stderr)
		}

		name := h.create(t, ctx, e, "lc-dirtyhost")
		sandboxScript(t, ctx, e, name, "echo agent >> a; git commit -qam agent")
		other := newLCHost(t)
		if r := other.podbot(t, ctx, e, "diff", name); r.Code != 7 || !strings.Contains(r.Stderr, "not from this repository") || !strings.Contains(r.Stderr, h.dir) {
			t.Errorf("diff from another repository: exit %d\n%s", r.Code, r.Stderr)
		}

		h.write(t, "b", "host edit\n")
		before := h.state(t)
		refs := h.git(t, "-C", h.dir, "for-each-ref")
		r := h.podbot(t, ctx, e, "apply", name)
		if r.Code != 7 || !strings.Contains(r.Stderr, "uncommitted changes") || !strings.Contains(r.Stderr, "git stash") {
			t.Errorf("apply on a dirty host: exit %d\n%s", r.Code, r.Stderr)
		}
		if after := h.state(t); after != before {
			t.Errorf("refused apply changed the host:\n%s\nwas:\n%s", after, before)
		}
		if got := h.git(t, "-C", h.dir, "for-each-ref"); got != refs {
			t.Errorf("refused apply changed refs:\n%s\nwas:\n%s", got, refs)
		}
		if got, _ := os.ReadFile(filepath.Join(h.dir, "b")); string(got) != "host edit\n" {
			t.Errorf("host file b = %q", got)
		}
		if got := sandboxScript(t, ctx, e, name, "git log --format=%s -1; git status --porcelain"); got != "agent\n" {
			t.Errorf("sandbox changed: %q", got)
		}

		// A conflict stops in git's ordinary state and says how to go back.
		h.git(t, "-C", h.dir, "commit", "-qam", "host edit of b")
		h.write(t, "a", "host rewrote a\n")
		h.git(t, "-C", h.dir, "commit", "-qam", "host rewrites a")
		r = h.podbot(t, ctx, e, "apply", name)
		if r.Code != 7 || !strings.Contains(r.Stderr, "git merge --abort") {
			t.Errorf("conflicting apply: exit %d\n%s", r.Code, r.Stderr)
		}
		if st := h.git(t, "-C", h.dir, "status", "--porcelain"); !strings.Contains(st, "UU a") {
			t.Errorf("conflict state: %q", st)
		}
		h.git(t, "-C", h.dir, "merge", "--abort")
	})
}
