//go:build linux

package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/tools"
)

const testMemberID = "0123456789ab"

// shortRoot is a workspace root short enough for a socket path under it
// (a test's own TempDir, named after the test, may not be).
func shortRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startTestMember makes a pool member of pool "p" on rt under root.
func startTestMember(t *testing.T, rt *fakeRuntime, root string) Running {
	t.Helper()
	opts := ContainerOptions{Options: Options{WorkspaceRoot: root}, Image: "test", Version: "test"}
	r, err := startPoolMember(context.Background(), rt, opts, "p", testMemberID, "podbot-pool-p-"+testMemberID, map[string]string{launchplan.LabelPool: "p"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// claimOpts are a claimer's options: session id s1 and one host file to
// hydrate the member's workspace with.
func claimOpts(t *testing.T, root string) ContainerOptions {
	t.Helper()
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "in.txt"), []byte("hydrated\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return ContainerOptions{Options: Options{ID: "s1", WorkspaceRoot: root, AllowedHostRoots: []string{host},
		Mounts: []HostMount{{HostPath: filepath.Join(host, "in.txt")}}}, Image: "test", Version: "test"}
}

// TestPoolMemberIsAReleasedSession: a member is a session's first
// container under its own name and labels, with a link directory, started
// and checked over the socket (no exec), then released: still running,
// its directory pool-<pool>-<id> in place.
func TestPoolMemberIsAReleasedSession(t *testing.T) {
	rt := newFakeRuntime()
	rt.withLink = true
	root := shortRoot(t)
	r := startTestMember(t, rt, root)
	if filepath.Base(r.SessionDir) != "pool-p-"+testMemberID || r.ContainerName != "podbot-pool-p-"+testMemberID {
		t.Fatalf("member = %+v", r)
	}
	spec := rt.specs[0]
	if spec.linkDir == "" || spec.labels[launchplan.LabelPool] != "p" || spec.labels[launchplan.LabelPoolDir] != r.SessionDir || spec.name != r.ContainerName {
		t.Fatalf("member container spec = %+v", spec)
	}
	if rt.attaches != 0 || rt.live() != 1 {
		t.Fatalf("%d execs, %d containers; want none and one", rt.attaches, rt.live())
	}
	if _, err := MemberDir(root, "p", testMemberID); err != nil {
		t.Fatal(err)
	}
}

// TestClaimPoolMemberOverTheSocket: a claim adopts the member under the
// claimer's session id, hydrates its workspace and connects over the
// socket: no start, no exec. Close removes the member and its directory.
func TestClaimPoolMemberOverTheSocket(t *testing.T) {
	rt := newFakeRuntime()
	rt.withLink = true
	root := shortRoot(t)
	r := startTestMember(t, rt, root)
	r.ContainerName = ContainerName("s1", 1)
	s, err := claimPoolMember(context.Background(), rt, claimOpts(t, root), r)
	if err != nil {
		t.Fatal(err)
	}
	if out := mustCall(t, s, tools.ReadFileTool, `{"file_path":"in.txt"}`); !strings.Contains(string(out), "hydrated") {
		t.Fatalf("read_file = %s", out)
	}
	in := s.Info()
	if in.ID != "s1" || in.Link != LinkSocket || in.ContainerID != r.ContainerID || rt.starts != 1 || rt.attaches != 0 {
		t.Fatalf("claimed: %+v, %d starts, %d execs; want the socket, one start, no exec", in, rt.starts, rt.attaches)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(r.SessionDir); !os.IsNotExist(err) || rt.live() != 0 {
		t.Fatalf("after Close: dir %v, %d containers", err, rt.live())
	}
}

// TestClaimPoolMemberFallsBackToExec: a claimer that asks for an exec
// stream, and a member whose socket the sandbox replaced, both get one.
func TestClaimPoolMemberFallsBackToExec(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*ContainerOptions, Running)
	}{
		{"exec", func(o *ContainerOptions, _ Running) { o.SidecarLink = SidecarLinkExec }},
		{"replaced", func(_ *ContainerOptions, r Running) {
			if err := os.WriteFile(filepath.Join(r.SessionDir, "sidecar", "tools.sock.new"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(r.SessionDir, "sidecar", "tools.sock.new"), filepath.Join(r.SessionDir, "sidecar", "tools.sock")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newFakeRuntime()
			rt.withLink = true
			root := shortRoot(t)
			r := startTestMember(t, rt, root)
			r.ContainerName = ContainerName("s1", 1)
			opts := claimOpts(t, root)
			tc.mutate(&opts, r)
			s, err := claimPoolMember(context.Background(), rt, opts, r)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			mustCall(t, s, tools.ReadFileTool, `{"file_path":"in.txt"}`)
			if in := s.Info(); in.Link != LinkExec || rt.attaches != 1 || rt.starts != 1 {
				t.Fatalf("link %q, %d execs, %d starts; want one exec into the member", in.Link, rt.attaches, rt.starts)
			}
		})
	}
}

// TestClaimPoolMemberRefusals: no session id, a directory that is not a
// member's or is a link: refused, the taken container removed, and a
// directory that failed the checks left alone.
func TestClaimPoolMemberRefusals(t *testing.T) {
	rt := newFakeRuntime()
	rt.withLink = true
	root := shortRoot(t)
	r := startTestMember(t, rt, root)
	opts := claimOpts(t, root)
	noID := opts
	noID.ID = ""
	if _, err := claimPoolMember(context.Background(), rt, noID, r); !errors.Is(err, errdefs.ErrMissingRequired) {
		t.Errorf("claim without a session id: %v", err)
	}
	other := filepath.Join(root, "elsewhere")
	if err := os.MkdirAll(filepath.Join(other, workspaceSubdir), 0o700); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(root, "pool-p-bbbbbbbbbbbb")
	if err := os.Symlink(r.SessionDir, linked); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{other, linked} {
		bad := r
		bad.SessionDir = dir
		if _, err := claimPoolMember(context.Background(), rt, opts, bad); err == nil {
			t.Errorf("claimed a member in %s", dir)
		}
		if _, err := os.Lstat(dir); err != nil {
			t.Errorf("%s was removed: %v", dir, err)
		}
	}
	if rt.live() != 0 {
		t.Errorf("%d containers left; a refused claim removes the taken member", rt.live())
	}
	if _, err := os.Stat(filepath.Join(r.SessionDir, workspaceSubdir)); err != nil {
		t.Errorf("the member's real directory was touched through a link: %v", err)
	}
}

func TestAdoptedSessionID(t *testing.T) {
	for _, tc := range []struct {
		base, given, want string
		ok                bool
	}{
		{"session-abc", "", "abc", true},
		{"session-abc", "s1", "abc", true},
		{"pool-p-0123456789ab", "s1", "s1", true},
		{"pool-my-pool-0123456789ab", "s1", "s1", true},
		{"pool-p-0123456789ab", "", "", false},
		{"pool-p-xyz", "s1", "", false},
		{"pool--0123456789ab", "s1", "", false},
		{"workspace", "s1", "", false},
	} {
		got, ok := adoptedSessionID(tc.base, tc.given)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("adoptedSessionID(%q, %q) = %q, %v", tc.base, tc.given, got, ok)
		}
	}
}

// TestSettleRename: a claim handed out before its rename landed works at
// once; a rename that succeeds changes nothing; one that fails replaces
// the member (still named as one) with a container of the session's own
// on the next call; Close waits for the rename to settle.
func TestSettleRename(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(map[bool]string{false: "renamed", true: "rename failed"}[fail], func(t *testing.T) {
			rt := newFakeRuntime()
			rt.withLink = true
			root := shortRoot(t)
			r := startTestMember(t, rt, root)
			r.ContainerName = ContainerName("s1", 1)
			s, err := claimPoolMember(context.Background(), rt, claimOpts(t, root), r)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			s.SettleRename(context.Background(), done)
			// The first call does not wait for the rename.
			mustCall(t, s, tools.ReadFileTool, `{"file_path":"in.txt"}`)
			if fail {
				done <- errors.New("name in use")
			} else {
				done <- nil
			}
			s.awaitRename(context.Background())
			out := mustCall(t, s, tools.ReadFileTool, `{"file_path":"in.txt"}`)
			if !strings.Contains(string(out), "hydrated") {
				t.Fatalf("read_file after the rename settled = %s", out)
			}
			in := s.Info()
			switch {
			case !fail && (in.ContainerID != r.ContainerID || rt.starts != 1):
				t.Fatalf("renamed: %+v, %d starts; want the member still", in, rt.starts)
			case fail && (in.ContainerID == r.ContainerID || rt.starts != 2 || in.ContainerName != ContainerName("s1", 2) || rt.live() != 1):
				t.Fatalf("rename failed: %+v, %d starts, %d live; want the member removed and a container of the session's own", in, rt.starts, rt.live())
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if rt.live() != 0 {
				t.Fatalf("%d containers after Close", rt.live())
			}
		})
	}
}

// TestCloseWaitsForRename: Close does not return while the rename is in
// flight (it would otherwise land on a removed container unseen).
func TestCloseWaitsForRename(t *testing.T) {
	rt := newFakeRuntime()
	rt.withLink = true
	root := shortRoot(t)
	r := startTestMember(t, rt, root)
	r.ContainerName = ContainerName("s1", 1)
	s, err := claimPoolMember(context.Background(), rt, claimOpts(t, root), r)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	s.SettleRename(context.Background(), done)
	closed := make(chan error, 1)
	go func() { closed <- s.Close(context.Background()) }()
	select {
	case <-closed:
		t.Fatal("Close returned before the rename settled")
	case <-time.After(50 * time.Millisecond):
	}
	done <- nil
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}
