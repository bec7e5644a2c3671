package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMemberDirChecks(t *testing.T) {
	root := t.TempDir()
	good := filepath.Join(root, "pool-p-0123456789ab")
	if err := os.MkdirAll(filepath.Join(good, workspaceSubdir), 0o700); err != nil {
		t.Fatal(err)
	}
	if got, err := MemberDir(root, "p", "0123456789ab"); err != nil || got != good {
		t.Fatalf("%q %v", got, err)
	}
	// Open to others: refused.
	open := filepath.Join(root, "pool-p-aaaaaaaaaaaa")
	os.MkdirAll(filepath.Join(open, workspaceSubdir), 0o700)
	os.Chmod(open, 0o755)
	if _, err := MemberDir(root, "p", "aaaaaaaaaaaa"); err == nil {
		t.Error("directory open to others accepted")
	}
	// A link in place of the directory or of its workspace: refused.
	os.Symlink(good, filepath.Join(root, "pool-p-bbbbbbbbbbbb"))
	if _, err := MemberDir(root, "p", "bbbbbbbbbbbb"); err == nil {
		t.Error("linked member directory accepted")
	}
	lw := filepath.Join(root, "pool-p-cccccccccccc")
	os.Mkdir(lw, 0o700)
	os.Symlink(t.TempDir(), filepath.Join(lw, workspaceSubdir))
	if _, err := MemberDir(root, "p", "cccccccccccc"); err == nil {
		t.Error("linked workspace accepted")
	}
	for _, bad := range [][2]string{{"../x", "0123456789ab"}, {"p", "../../etc"}, {"p", ""}, {"a.b", "0123456789ab"}} {
		if _, err := MemberDir(root, bad[0], bad[1]); err == nil {
			t.Errorf("MemberDir(%q, %q) accepted", bad[0], bad[1])
		}
	}
}

func TestContainerNameIsStable(t *testing.T) {
	if got := ContainerName("5E1F-2555.4939_abcdef", 1); got != "podbot-tools-5e1f25554939-1" {
		t.Fatal(got)
	}
}
