//go:build linux

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podbot/podbot/sidecarsock"
	"github.com/podbot/podbot/tools"
)

func newLinkedContainer(t *testing.T) (*Container, *fakeRuntime) {
	t.Helper()
	s, rt, _ := newFakeContainer(t, nil)
	rt.withLink = true
	return s, rt
}

// TestContainerConnectsOverTheSocket: a session whose container has a
// link directory reaches its sidecar without an exec, also after Detach.
func TestContainerConnectsOverTheSocket(t *testing.T) {
	s, rt := newLinkedContainer(t)
	if got := shell(t, s, "echo", "hi"); got.Stdout != "hi\n" {
		t.Fatalf("echo = %+v", got)
	}
	if in := s.Info(); in.Link != LinkSocket || rt.attaches != 0 {
		t.Fatalf("link %q with %d execs; want the socket and none", in.Link, rt.attaches)
	}
	for range 3 {
		s.Detach()
		mustCall(t, s, tools.LsTool, `{"path":"."}`)
	}
	if in := s.Info(); in.Link != LinkSocket || rt.attaches != 0 || rt.starts != 1 {
		t.Fatalf("after Detach: link %q, %d execs, %d starts; want the socket, none, one", in.Link, rt.attaches, rt.starts)
	}
	// The key file is gone from the sandbox's view; podbot's copy is not in it.
	if _, err := os.Lstat(filepath.Join(s.link.dir, sidecarsock.KeyName)); !os.IsNotExist(err) {
		t.Fatalf("the key file is still in the link directory: %v", err)
	}
}

// TestContainerIgnoresAPlantedSymlink: the sandbox replaces its socket
// with a link to a host path; podbot neither follows it nor gives up the
// session, it falls back to an exec stream.
func TestContainerIgnoresAPlantedSymlink(t *testing.T) {
	s, rt := newLinkedContainer(t)
	shell(t, s, "true")
	sock := filepath.Join(s.link.dir, sidecarsock.SocketName)
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "host-file")
	if err := os.WriteFile(target, []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, sock); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(target)
	s.Detach()
	mustCall(t, s, tools.LsTool, `{"path":"."}`)
	if in := s.Info(); in.Link != LinkExec || rt.attaches != 1 {
		t.Fatalf("link %q with %d execs; want the exec fallback", in.Link, rt.attaches)
	}
	after, _ := os.Stat(target)
	if !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() {
		t.Fatal("the symlink's target was touched")
	}
}

// TestContainerFallsBackWithoutSocket: a container whose sidecar never
// listens (an older sidecar, an engine that cannot share the directory)
// is reached with an exec, and later containers get no link directory.
func TestContainerFallsBackWithoutSocket(t *testing.T) {
	s, rt, _ := newFakeContainer(t, nil)
	rt.silentLink = true
	shell(t, s, "true")
	if in := s.Info(); in.Link != LinkExec || rt.attaches != 1 || rt.linkMissed != 1 {
		t.Fatalf("link %q with %d execs, %d missing sockets", in.Link, rt.attaches, rt.linkMissed)
	}
	if _, _, ok := rt.linkOwner(); ok {
		t.Fatal("the runtime still offers link directories")
	}
}

// TestContainerSidecarLinkExec: SidecarLinkExec never makes a link directory.
func TestContainerSidecarLinkExec(t *testing.T) {
	s, rt, _ := newFakeContainer(t, func(o *ContainerOptions) { o.SidecarLink = SidecarLinkExec })
	rt.withLink = true
	shell(t, s, "true")
	if in := s.Info(); in.Link != LinkExec || s.link != nil {
		t.Fatalf("link %q", in.Link)
	}
}

// TestReleaseAndAdopt: a running container handed from one session to
// another is reached over its socket with no start and no exec; the
// adopter's Close removes it and the session directory, the releaser's
// Close removes nothing.
func TestReleaseAndAdopt(t *testing.T) {
	a, rt := newLinkedContainer(t)
	mustCall(t, a, tools.WriteFileTool, `{"file_path":"f.txt","content":"hi\n"}`)
	r, ok := a.Release()
	if !ok || r.ContainerID == "" || r.SessionDir != a.SessionDir() {
		t.Fatalf("Release = %+v, %v", r, ok)
	}
	if err := a.Close(context.Background()); err != nil || rt.live() != 1 {
		t.Fatalf("the releaser's Close: %v, %d containers left", err, rt.live())
	}
	if _, err := a.Call(context.Background(), tools.LsTool, []byte(`{"path":"."}`)); err == nil {
		t.Fatal("a released session still calls")
	}
	b, err := adoptContainer(context.Background(), rt, a.copts, r)
	if err != nil {
		t.Fatal(err)
	}
	out := mustCall(t, b, tools.ReadFileTool, `{"file_path":"f.txt"}`)
	if !strings.Contains(string(out), "hi") {
		t.Fatalf("read_file = %s", out)
	}
	if in := b.Info(); in.Link != LinkSocket || in.ContainerID != r.ContainerID || rt.starts != 1 || rt.attaches != 0 {
		t.Fatalf("adopted: %+v, %d starts, %d execs", in, rt.starts, rt.attaches)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.SessionDir); !os.IsNotExist(err) || rt.live() != 0 {
		t.Fatalf("after the adopter's Close: dir %v, %d containers", err, rt.live())
	}
}

func TestAdoptRefusesABadHandle(t *testing.T) {
	rt := newFakeRuntime()
	for _, r := range []Running{
		{ContainerID: "c1", SessionDir: "relative/session-x"},
		{ContainerID: "c1", SessionDir: "/tmp/not-a-session"},
		{SessionDir: "/tmp/session-x"},
		{ContainerID: "c1", SessionDir: t.TempDir() + "/session-missing"},
	} {
		if _, err := adoptContainer(context.Background(), rt, ContainerOptions{}, r); err == nil {
			t.Errorf("adopted %+v", r)
		}
	}
}

func TestAdoptRefusesAnOpenOrLinkedDirectory(t *testing.T) {
	rt := newFakeRuntime()
	root := t.TempDir()
	open := filepath.Join(root, "session-open")
	if err := os.MkdirAll(filepath.Join(open, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(root, "session-linked")
	if err := os.Symlink(open, linked); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{open, linked} {
		if _, err := adoptContainer(context.Background(), rt, ContainerOptions{}, Running{ContainerID: "c1", SessionDir: dir}); err == nil {
			t.Errorf("adopted %s", dir)
		}
	}
}
