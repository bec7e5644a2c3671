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

// gitWrapper replaces git inside a hostile sandbox: it passes everything
// to the real git, but adds refs named refs/heads/main, ../../x and one
// with terminal escapes to every bundle it writes.
const gitWrapper = `#!/usr/bin/python3
import os, subprocess, sys
args = sys.argv[1:]
if "bundle" in args:
    out = subprocess.run(["/usr/bin/git"] + args, stdout=subprocess.PIPE, check=True).stdout
    head, _, pack = out.partition(b"\n\n")
    lines = head.split(b"\n")
    sha = lines[-1].split(b" ")[0]
    lines += [sha + b" refs/heads/main", sha + b" ../../x", sha + b" refs/heads/\x1b]0;pwned\x07"]
    sys.stdout.buffer.write(b"\n".join(lines) + b"\n\n" + pack)
    sys.exit(0)
os.execv("/usr/bin/git", ["git"] + args)
`

// hostileScript plants everything git could run on the host: hooks,
// core.fsmonitor, core.hooksPath, filter, diff and merge drivers, refs
// named main, and a file and commit message with terminal escapes. $1 is
// the host's marker path (it does not exist in the sandbox).
const hostileScript = `set -e
cd /work/app
M="$1"
git config user.name agent; git config user.email agent@example.com
hook='#!/bin/sh
touch '"$M"' 2>/dev/null; exit 0'
for h in post-checkout post-merge pre-commit pre-merge-commit commit-msg reference-transaction post-rewrite pre-push post-index-change; do
	printf '%s\n' "$hook" > .git/hooks/$h; chmod +x .git/hooks/$h
done
mkdir -p .githooks && cp .git/hooks/* .githooks/
git config core.hooksPath /work/app/.githooks
git config core.fsmonitor "touch $M 2>/dev/null; true"
git config filter.evil.clean "touch $M 2>/dev/null; cat"
git config filter.evil.smudge "touch $M 2>/dev/null; cat"
git config filter.evil.required false
git config diff.evil.textconv "touch $M 2>/dev/null; cat"
git config merge.evil.driver "touch $M 2>/dev/null; true"
echo '* filter=evil diff=evil merge=evil' > .gitattributes
printf 'content \033[31mred\033[0m \033]52;c;QUFBQQ==\007 \233 2J\n' > "$(printf 'evil\033]0;pwned\007\033[2Jname')"
echo 'line from agent' >> a
git add -A
git commit -q -m "$(printf 'agent \033]0;title\007\033[2J message')"
git update-ref refs/heads/main HEAD
git tag evil HEAD
cat > /usr/local/bin/git <<'PY'
` + gitWrapper + `PY
chmod 755 /usr/local/bin/git
`

// rawEscapes reports whether s holds a byte a terminal acts on.
func rawEscapes(s string) bool {
	return strings.ContainsAny(s, "\x1b\x07\x9b") || strings.Contains(s, "\u009b")
}

// TestLocalCloneHostileSandbox plays a hostile agent on each engine (see
// hostileScript and gitWrapper): after podbot diff, log, fetch and apply no
// command ran on the host, its config, hooks and other branches are
// unchanged, the extra refs were ignored, and the escapes reached the
// terminal only as visible text.
func TestLocalCloneHostileSandbox(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		h := newLCHost(t)
		marker := filepath.Join(t.TempDir(), "marker")
		name := h.create(t, ctx, e, "lc-hostile")
		mustExec(t, ctx, e, name, "sh", "-c", hostileScript, "sh", marker)

		before := h.state(t)
		refsBefore := h.git(t, "-C", h.dir, "for-each-ref", "--format=%(refname) %(objectname)")

		diff := h.mustPodbot(t, ctx, e, "diff", name)
		if rawEscapes(diff.Stdout) || rawEscapes(diff.Stderr) {
			t.Errorf("diff let terminal escapes through:\n%q", diff.Stdout)
		}
		if !strings.Contains(diff.Stdout, `\x1b[31mred`) || !strings.Contains(diff.Stdout, "+line from agent") {
			t.Errorf("diff lacks the neutralised content:\n%s", diff.Stdout)
		}
		lg := h.mustPodbot(t, ctx, e, "log", name)
		if rawEscapes(lg.Stdout) || !strings.Contains(lg.Stdout, `agent \x1b]0;title\x07\x1b[2J message`) {
			t.Errorf("log:\n%q", lg.Stdout)
		}
		dj := h.mustPodbot(t, ctx, e, "diff", name, "--json")
		if strings.Contains(dj.Stdout, `\u001b`) || rawEscapes(dj.Stdout) {
			t.Errorf("diff --json carries escapes:\n%s", dj.Stdout)
		}

		fetch := h.mustPodbot(t, ctx, e, "fetch", name)
		if !strings.Contains(fetch.Stderr, "ignored 3 ref(s)") || !strings.Contains(fetch.Stderr, "../../x") || rawEscapes(fetch.Stderr) {
			t.Errorf("fetch did not name the ignored refs safely:\n%q", fetch.Stderr)
		}
		refsAfter := h.git(t, "-C", h.dir, "for-each-ref", "--format=%(refname) %(objectname)")
		tip := strings.TrimSpace(h.git(t, "-C", h.dir, "rev-parse", "refs/heads/podbot/"+name))
		if want := refsBefore + "refs/heads/podbot/" + name + " " + tip + "\n"; sortedLines(refsAfter) != sortedLines(want) {
			t.Errorf("refs after fetch:\n%s\nwant:\n%s", refsAfter, want)
		}
		for _, p := range []string{filepath.Join(h.dir, ".git", "x"), filepath.Join(filepath.Dir(h.dir), "x"), filepath.Join(h.dir, "x")} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("a ref named ../../x left %s", p)
			}
		}
		if after := h.state(t); after != before {
			t.Errorf("fetch changed the host:\n%s\nwas:\n%s", after, before)
		}

		h.mustPodbot(t, ctx, e, "apply", name)
		if got, _ := os.ReadFile(filepath.Join(h.dir, "a")); !strings.HasSuffix(string(got), "line from agent\n") {
			t.Errorf("apply did not bring the change: %q", got)
		}
		// The user's next git commands in the checkout.
		h.git(t, "-C", h.dir, "status")
		h.git(t, "-C", h.dir, "diff", "HEAD~1")
		h.git(t, "-C", h.dir, "checkout", "-q", "-b", "after-apply")
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("a command planted by the sandbox ran on the host (%s exists)", marker)
		}
		cfg, _ := os.ReadFile(filepath.Join(h.dir, ".git", "config"))
		if !strings.Contains(before, string(cfg)) || strings.Contains(string(cfg), "evil") || strings.Contains(string(cfg), "fsmonitor") {
			t.Errorf("host config changed:\n%s", cfg)
		}
		if got := h.git(t, "-C", h.dir, "tag", "-l"); got != "" {
			t.Errorf("host has tags from the sandbox: %q", got)
		}
	})
}

// sortedLines sorts s's lines, so ref listings compare as sets.
func sortedLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := 1; i < len(lines); i++ {
		for j := i; j > 0 && lines[j] < lines[j-1]; j-- {
			lines[j], lines[j-1] = lines[j-1], lines[j]
		}
	}
	return strings.Join(lines, "\n")
}
