package podbot

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestStaleTokenScopes: prune takes a claimed member's token scope only
// when the file records this engine, is older than the grace, and no
// container names the member any more; other engines' files, fresh ones,
// files without an engine, symbolic links and other names stay.
func TestStaleTokenScopes(t *testing.T) {
	rt := t.TempDir()
	root := filepath.Join(rt, "podbot")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	const here, there = "unix:///run/podman/podman.sock", "unix:///run/docker.sock"
	old := time.Now().Add(-2 * createdGrace)
	write := func(member, engine string, mtime time.Time) {
		t.Helper()
		if err := writeTokenScope(rt, member, tokenScope{Repo: "octo-org/demo", Origin: "https://github.com", Engine: engine}); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(root, member), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(root, member+scopeSuffix), mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	write("podbot-pool-a-000000000001", here, old)        // gone: taken
	write("podbot-pool-a-000000000002", here, old)        // still named by a container
	write("podbot-pool-a-000000000003", there, old)       // another engine's
	write("podbot-pool-a-000000000004", "", old)          // written before engines were recorded
	write("podbot-pool-a-000000000005", here, time.Now()) // too fresh
	if err := os.WriteFile(filepath.Join(root, "mybox.scope"), []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "podbot-pool-a-000000000001.scope"), filepath.Join(root, "podbot-pool-a-000000000006.scope")); err != nil {
		t.Fatal(err)
	}
	alive := map[string]bool{"podbot-pool-a-000000000002": true}
	got, err := staleTokenScopes(rt, here, time.Now().Add(-createdGrace), func(n string) bool { return !alive[n] })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"podbot-pool-a-000000000001"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("stale = %v, want %v", got, want)
	}
	if err := removeMemberToken(rt, map[string]string{LabelTokenDir: got[0]}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{got[0], got[0] + scopeSuffix} {
		if _, err := os.Lstat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", p, err)
		}
	}
	// No podbot directory, or a relative runtime directory: nothing.
	if got, err := staleTokenScopes(t.TempDir(), here, time.Now(), func(string) bool { return true }); err != nil || len(got) != 0 {
		t.Fatalf("empty runtime dir: %v %v", got, err)
	}
	if _, err := staleTokenScopes("relative", here, time.Now(), func(string) bool { return true }); err == nil {
		t.Fatal("a relative runtime directory was accepted")
	}
}
