package podbot

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/sidecarsock"
)

// TestRemoveSidecarLink: the link directory and the host's key go, the
// workspace stays, for a session's directory and a pool member's.
func TestRemoveSidecarLink(t *testing.T) {
	for _, name := range []string{"session-abc", "pool-p-0123456789ab"} {
		session := filepath.Join(t.TempDir(), name)
		link := filepath.Join(session, sidecarsock.LinkDirName)
		ws := filepath.Join(session, "workspace")
		for _, d := range []string{link, ws} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range []string{filepath.Join(link, "tools.sock"), filepath.Join(session, sidecarsock.HostKeyName), filepath.Join(ws, "keep")} {
			if err := os.WriteFile(f, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := removeSidecarLink(link); err != nil {
			t.Fatal(err)
		}
		for _, gone := range []string{link, filepath.Join(session, sidecarsock.HostKeyName)} {
			if _, err := os.Lstat(gone); !os.IsNotExist(err) {
				t.Errorf("%s survived: %v", gone, err)
			}
		}
		if _, err := os.Stat(filepath.Join(ws, "keep")); err != nil {
			t.Errorf("%s: the workspace was touched: %v", name, err)
		}
		if err := removeSidecarLink(link); err != nil {
			t.Errorf("%s: removing it again: %v", name, err)
		}
	}
}

func TestRemoveSidecarLinkRefusesOtherPaths(t *testing.T) {
	root := t.TempDir()
	victim := filepath.Join(root, "victim")
	if err := os.Mkdir(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	session := filepath.Join(root, "session-x")
	if err := os.Mkdir(session, 0o700); err != nil {
		t.Fatal(err)
	}
	symlinked := filepath.Join(session, sidecarsock.LinkDirName)
	if err := os.Symlink(victim, symlinked); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{victim, filepath.Join(root, "other", sidecarsock.LinkDirName), "relative/session-x/sidecar", symlinked} {
		if err := removeSidecarLink(p); !errors.Is(err, errdefs.ErrRefused) {
			t.Errorf("removeSidecarLink(%q) = %v, want a refusal", p, err)
		}
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the symlink's target was removed: %v", err)
	}
}
