//go:build unix

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScanMembers: a scan names the members of one pool whose directory
// passes MemberDir's checks and holds a valid record, and nothing else: no
// other pool's, no session's, no record that is a link, too long, not an
// id; a forgotten member is no longer named.
func TestScanMembers(t *testing.T) {
	root := t.TempDir()
	id := strings.Repeat("ab", 32)
	mk := func(name string) string {
		t.Helper()
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(dir, workspaceSubdir), 0o700); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	good := mk("pool-p-0123456789ab")
	if err := RecordMember(good, id); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(good, MemberRecordName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("record: %v %v", fi, err)
	}
	// Another pool whose name starts like this one's, and a session.
	for _, n := range []string{"pool-p-x-0123456789ab", "pool-px-0123456789ab", "session-0123456789ab", "pool-p-0123456789abc"} {
		if err := RecordMember(mk(n), id); err != nil {
			t.Fatal(err)
		}
	}
	// A record that is a link, one that is not an id, one too long.
	linked := mk("pool-p-111111111111")
	os.Symlink(filepath.Join(good, MemberRecordName), filepath.Join(linked, MemberRecordName))
	os.WriteFile(filepath.Join(mk("pool-p-222222222222"), MemberRecordName), []byte("../../etc/passwd\n"), 0o600)
	os.WriteFile(filepath.Join(mk("pool-p-333333333333"), MemberRecordName), []byte(strings.Repeat(id, 3)), 0o600)
	// A directory open to others.
	open := mk("pool-p-444444444444")
	RecordMember(open, id)
	os.Chmod(open, 0o755)
	// A link in place of a member directory.
	os.Symlink(good, filepath.Join(root, "pool-p-555555555555"))
	got, err := ScanMembers(root, "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != (ScannedMember{ContainerID: id, MemberID: "0123456789ab", Dir: good}) {
		t.Fatalf("scan = %+v; want only %s", got, good)
	}
	if err := RecordMember(good, "not-an-id"); err == nil {
		t.Error("a record that is not a container id was written")
	}
	if err := ForgetMember(good); err != nil {
		t.Fatal(err)
	}
	if got, _ := ScanMembers(root, "p"); len(got) != 0 {
		t.Fatalf("scan after ForgetMember = %+v", got)
	}
	if got, err := ScanMembers(filepath.Join(root, "missing"), "p"); err != nil || len(got) != 0 {
		t.Fatalf("scan of a missing root = %+v, %v", got, err)
	}
	if _, err := ScanMembers(root, "../p"); err == nil {
		t.Error("a pool name with a path separator was scanned")
	}
}

// FuzzMemberRecord: whatever a member record holds, readMemberRecord
// returns either an error or exactly one full container id.
func FuzzMemberRecord(f *testing.F) {
	f.Add([]byte(strings.Repeat("ab", 32) + "\n"))
	f.Add([]byte(strings.Repeat("ab", 32) + "\n" + strings.Repeat("cd", 32)))
	f.Add([]byte("../../etc/passwd"))
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, MemberRecordName)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		id, err := readMemberRecord(dir)
		if err == nil && !containerIDPattern.MatchString(id) {
			t.Fatalf("record %q read as %q", data, id)
		}
	})
}
