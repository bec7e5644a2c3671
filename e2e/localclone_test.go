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

// TestLocalCloneTwoSandboxes copies one host repository into two sandboxes
// on each engine, lets each commit a different change, and takes the work
// back: diff shows each, fetch brings both branches, apply of one merges
// cleanly, and --dirty carries an uncommitted host change in.
func TestLocalCloneTwoSandboxes(t *testing.T) {
	t.Parallel() // long, and touches only what it names (see forEachEngine)
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		h := newLCHost(t)
		base := strings.TrimSpace(h.git(t, "-C", h.dir, "rev-parse", "HEAD"))
		one := h.create(t, ctx, e, "lc-one")
		two := h.create(t, ctx, e, "lc-two")

		for _, n := range []string{one, two} {
			got := sandboxScript(t, ctx, e, n, "git rev-parse HEAD; git symbolic-ref HEAD; git remote; git config --local -l | grep -c -e hooks -e fsmonitor -e remote || true")
			want := base + "\nrefs/heads/podbot/" + n + "\n0\n"
			if got != want {
				t.Fatalf("sandbox %s copy: got %q, want %q", n, got, want)
			}
		}
		sandboxScript(t, ctx, e, one, "printf 'line one\\nline two changed by one\\n' > a; git commit -qam 'one: change a'")
		sandboxScript(t, ctx, e, two, "echo sea > c; git add c; git commit -qm 'two: add c'; echo 'uncommitted in two' >> b")

		d1 := h.mustPodbot(t, ctx, e, "diff", one).Stdout
		if !strings.Contains(d1, "+line two changed by one") || strings.Contains(d1, "+sea") {
			t.Errorf("diff %s:\n%s", one, d1)
		}
		d2 := h.mustPodbot(t, ctx, e, "diff", two).Stdout
		if !strings.Contains(d2, "+sea") || !strings.Contains(d2, "+uncommitted in two") || strings.Contains(d2, "changed by one") {
			t.Errorf("diff %s:\n%s", two, d2)
		}
		var dj struct {
			Base  string `json:"base"`
			Files []struct {
				Path      string `json:"path"`
				Additions int    `json:"additions"`
			} `json:"files"`
		}
		decodeJSON(t, h.mustPodbot(t, ctx, e, "diff", two, "--json").Stdout, &dj)
		if dj.Base != base || len(dj.Files) != 2 || dj.Files[0].Path != "b" || dj.Files[1].Path != "c" {
			t.Errorf("diff --json: %+v", dj)
		}
		if st := h.mustPodbot(t, ctx, e, "diff", one, "--stat").Stdout; !strings.Contains(st, "1 file changed") {
			t.Errorf("diff --stat:\n%s", st)
		}
		if lg := h.mustPodbot(t, ctx, e, "log", one).Stdout; !strings.Contains(lg, "one: change a") || strings.Contains(lg, "add b") {
			t.Errorf("log:\n%s", lg)
		}

		h.mustPodbot(t, ctx, e, "fetch", one)
		h.mustPodbot(t, ctx, e, "fetch", two)
		if got := h.git(t, "-C", h.dir, "log", "--format=%s", "-1", "podbot/"+one); got != "one: change a\n" {
			t.Errorf("podbot/%s tip: %q", one, got)
		}
		if got := h.git(t, "-C", h.dir, "log", "--format=%s", "-1", "podbot/"+two); got != "two: add c\n" {
			t.Errorf("podbot/%s tip: %q", two, got)
		}
		if got := strings.TrimSpace(h.git(t, "-C", h.dir, "rev-parse", "main")); got != base {
			t.Errorf("fetch moved main to %s", got)
		}
		ps := h.mustPodbot(t, ctx, e, "ps").Stdout
		if !strings.Contains(ps, "REPO") || !strings.Contains(ps, h.dir) || !strings.Contains(ps, "podbot/"+one) {
			t.Errorf("ps does not show repo and branch:\n%s", ps)
		}

		// The host moves on; applying one still merges cleanly.
		h.write(t, "b", "bee\nhost line\n")
		h.git(t, "-C", h.dir, "commit", "-qam", "host: change b")
		h.mustPodbot(t, ctx, e, "apply", one)
		if got, _ := os.ReadFile(filepath.Join(h.dir, "a")); string(got) != "line one\nline two changed by one\n" {
			t.Errorf("after apply, a = %q", got)
		}
		if got := h.git(t, "-C", h.dir, "status", "--porcelain"); got != "" {
			t.Errorf("after apply, status %q", got)
		}
		if got := h.git(t, "-C", h.dir, "log", "--format=%P", "-1"); len(strings.Fields(got)) != 2 {
			t.Errorf("apply made no merge commit: parents %q", got)
		}

		// rm refuses a sandbox with unfetched work unless forced.
		sandboxScript(t, ctx, e, two, "git commit -qam 'two: more'; git pack-refs --all")
		h.mustPodbot(t, ctx, e, "stop", two)
		if r := h.podbot(t, ctx, e, "rm", two); r.Code != 7 || !strings.Contains(r.Stderr, "never fetched") {
			t.Errorf("rm of unfetched work: exit %d\n%s", r.Code, r.Stderr)
		}
		h.mustPodbot(t, ctx, e, "rm", "--force", two)

		// --dirty: an uncommitted change and an untracked file come along.
		h.write(t, "a", "dirty host a\n")
		h.write(t, "untracked", "new on host\n")
		before := h.state(t)
		three := h.create(t, ctx, e, "lc-dirty", "--dirty")
		got := sandboxScript(t, ctx, e, three, "cat a untracked; git status --porcelain; git log --format=%s -1")
		if got != "dirty host a\nnew on host\npodbot: uncommitted changes from the host\n" {
			t.Errorf("--dirty copy: %q", got)
		}
		if after := h.state(t); after != before {
			t.Errorf("--dirty changed the host:\n%s\nvs\n%s", before, after)
		}
		if d := h.mustPodbot(t, ctx, e, "diff", three).Stdout; d != "" {
			t.Errorf("a fresh --dirty sandbox has a diff:\n%s", d)
		}

		// --depth 1: one commit of history, and the work still comes back.
		four := h.create(t, ctx, e, "lc-depth", "--depth", "1")
		got = sandboxScript(t, ctx, e, four, "git rev-list --count HEAD; git rev-parse --is-shallow-repository; cat a; echo deep > d; git add d; git commit -qm 'four: add d'")
		if got != "1\ntrue\nline one\nline two changed by one\n" {
			t.Errorf("--depth 1 copy: %q", got)
		}
		if d := h.mustPodbot(t, ctx, e, "diff", four, "--stat").Stdout; !strings.Contains(d, " d | 1 +") {
			t.Errorf("diff of a shallow sandbox:\n%s", d)
		}
		h.mustPodbot(t, ctx, e, "fetch", four)
		if got := h.git(t, "-C", h.dir, "log", "--format=%s", "-1", "podbot/"+four); got != "four: add d\n" {
			t.Errorf("podbot/%s tip: %q", four, got)
		}
	})
}
