package localclone

import "strings"

// SnapshotRef is the ref inside the sandbox that holds the latest snapshot
// of its work tree (committed and uncommitted work) that podbot took.
const SnapshotRef = "refs/podbot/snapshot"

// sandboxGit is the git invocation used inside the sandbox: hooks and
// fsmonitor off, so podbot's own commands there run none of the agent's
// programs by accident (they could not reach the host anyway).
const sandboxGit = `git -c core.hooksPath=/dev/null -c core.fsmonitor=false`

// copyInScript makes a repository at $2 on branch $3 from the bundle $1:
// with a shallow list $4 (a --depth copy) it goes in first, so git takes
// the shallow history. The bundle and list are removed and HEAD printed.
const copyInScript = `set -eu
G="` + sandboxGit + `"
$G init -q -b "$3" -- "$2"
if [ -n "$4" ]; then cp -- "$4" "$2/.git/shallow"; rm -f -- "$4"; fi
$G -C "$2" fetch -q --no-tags --update-head-ok -- "$1" "refs/heads/$3:refs/heads/$3"
$G -C "$2" reset -q --hard
rm -f -- "$1"
$G -C "$2" rev-parse HEAD
`

// CopyInCommand is the argv that makes the copy from bundle in dir on
// branch inside the sandbox; shallow is the path of the shallow list, or
// empty. Values are passed as arguments, never into the script.
func CopyInCommand(bundle, dir, branch, shallow string) []string {
	return []string{"sh", "-c", copyInScript, "sh", bundle, dir, branch, shallow}
}

// exportScript writes to stdout a bundle of the branch $2 and a snapshot
// commit of the work tree against base $3. With $4 = 1 it first commits
// uncommitted work on the branch (fetch --snapshot). The snapshot is taken
// with podbot's own index (podbot-snapshot-index in the git directory),
// so the agent's index and branch are untouched; it starts as a copy of
// the agent's index and is kept between runs (replaced atomically) so the
// next run finds fresh stat data and git add -A only has to lstat the
// files, not read them again. Whenever the agent's index is another file
// than the one it was copied from (inode, size and mtime, kept in
// podbot-snapshot-index.src; git replaces the index by rename on every
// write), it is copied afresh. The script runs as few git processes as it can: one
// rev-parse, add, write-tree, commit-tree, update-ref and bundle.
const exportScript = `set -eu
cd -- "$1"
G="` + sandboxGit + `"
if [ "$4" = 1 ] && [ -n "$($G status --porcelain)" ]; then
	if [ "$($G symbolic-ref -q HEAD || :)" != "$2" ]; then echo "HEAD is not on $2: nothing committed" >&2; exit 3; fi
	if ! $G config user.name >/dev/null; then export GIT_AUTHOR_NAME=podbot GIT_COMMITTER_NAME=podbot; fi
	if ! $G config user.email >/dev/null; then export GIT_AUTHOR_EMAIL=podbot@localhost GIT_COMMITTER_EMAIL=podbot@localhost; fi
	$G add -A
	$G commit -q --no-verify -m "podbot: snapshot of uncommitted work"
fi
out=$($G rev-parse --git-path index --git-path podbot-snapshot-index -q --verify 'HEAD^{commit}' || :)
src= own= head=
{ IFS= read -r src || :; IFS= read -r own || :; IFS= read -r head || :; } <<EOF
$out
EOF
if [ -z "$own" ]; then echo "$1 is not a git work tree" >&2; exit 3; fi
[ -n "$head" ] || head=$3
idx=$(mktemp "$own.XXXXXX")
trap 'rm -f "$idx"' EXIT
sig=$(stat -c '%i %s %y' -- "$src" 2>/dev/null || :)
seen=
if [ -f "$own.src" ]; then IFS= read -r seen < "$own.src" || :; fi
if [ -n "$sig" ] && [ "$sig" = "$seen" ] && [ -f "$own" ]; then cp -- "$own" "$idx"; else cp -- "$src" "$idx" 2>/dev/null || :; fi
GIT_INDEX_FILE=$idx $G add -A
tree=$(GIT_INDEX_FILE=$idx $G write-tree)
if mv -f -- "$idx" "$own" 2>/dev/null; then printf '%s\n' "$sig" > "$own.src" || :; fi
snap=$(GIT_AUTHOR_NAME=podbot GIT_AUTHOR_EMAIL=podbot@localhost GIT_COMMITTER_NAME=podbot GIT_COMMITTER_EMAIL=podbot@localhost $G commit-tree -p "$head" -m "podbot: work tree snapshot" "$tree")
$G update-ref ` + SnapshotRef + ` "$snap"
$G bundle create -q - "$2" ` + SnapshotRef + ` "^$3"
`

// ExportCommand is the argv that writes the sandbox's bundle to stdout.
func ExportCommand(info Info, commit bool) []string {
	c := "0"
	if commit {
		c = "1"
	}
	return []string{"sh", "-c", exportScript, "sh", info.Dir, "refs/heads/" + info.Branch, info.Base, c}
}

// statusScript prints the branch's tip (empty if it is gone) and "dirty"
// or "clean".
const statusScript = `cd -- "$1" || exit 1
G="` + sandboxGit + `"
$G rev-parse -q --verify "$2" || echo
if [ -n "$($G status --porcelain | head -c 1)" ]; then echo dirty; else echo clean; fi
`

// StatusCommand is the argv that prints the branch tip and dirtiness.
func StatusCommand(info Info) []string {
	return []string{"sh", "-c", statusScript, "sh", info.Dir, "refs/heads/" + info.Branch}
}

// ParseStatus reads StatusCommand's output: the tip ("" when the branch is
// gone) and whether the work tree has uncommitted changes. ok is false for
// output podbot did not expect.
func ParseStatus(out string) (tip string, dirty, ok bool) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 2 {
		return "", false, false
	}
	tip = strings.TrimSpace(lines[0])
	if tip != "" && !isObjectID(tip) {
		return "", false, false
	}
	switch lines[1] {
	case "dirty":
		return tip, true, true
	case "clean":
		return tip, false, true
	}
	return "", false, false
}

// ParseLooseRef reads a loose ref file's content: an object id and a
// newline. A symbolic ref or anything else is not accepted.
func ParseLooseRef(data string) (string, bool) {
	id := strings.TrimSuffix(data, "\n")
	if !isObjectID(id) {
		return "", false
	}
	return id, true
}

// FindPackedRef returns the id packed-refs content gives ref.
func FindPackedRef(data, ref string) (string, bool) {
	for _, line := range strings.Split(data, "\n") {
		id, name, ok := strings.Cut(line, " ")
		if ok && name == ref && isObjectID(id) {
			return id, true
		}
	}
	return "", false
}
