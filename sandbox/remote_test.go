package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/tools"
)

// fakeRemote is a RemoteRuntime whose sandboxes are temp directories
// (their own workspaces, as a Pod's emptyDir) served by the real tools MCP
// server over pipes.
type fakeRemote struct {
	t         *testing.T
	mu        sync.Mutex
	n         int
	sandboxes map[string]*fakeRemoteSandbox
	argv      [][]string
	removed   []string
}

type fakeRemoteSandbox struct {
	dir     string
	running bool
	kill    func()
}

func newFakeRemote(t *testing.T) *fakeRemote {
	return &fakeRemote{t: t, sandboxes: map[string]*fakeRemoteSandbox{}}
}

func (f *fakeRemote) StartSandbox(_ context.Context, _, name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	id := fmt.Sprintf("%s/%d", name, f.n)
	f.sandboxes[id] = &fakeRemoteSandbox{dir: f.t.TempDir(), running: true}
	return id, nil
}

func (f *fakeRemote) AttachSidecar(_ context.Context, id string, argv []string) (*RemoteStream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.sandboxes[id]
	if sb == nil || !sb.running {
		return nil, &errdefs.ContainerError{Op: "exec", Container: id, Reason: errdefs.ErrNotFound, Msg: "no such sandbox"}
	}
	f.argv = append(f.argv, argv)
	ws, err := tools.NewWorkspace(sb.dir)
	if err != nil {
		return nil, err
	}
	toServerR, toServerW := io.Pipe()
	fromServerR, fromServerW := io.Pipe()
	go func() {
		_ = tools.NewMCPServer(ws, "test").Run(context.Background(), &tools.LineTransport{Reader: toServerR, Writer: fromServerW})
		ws.Close()
	}()
	kill := func() {
		fromServerW.CloseWithError(io.EOF)
		toServerR.CloseWithError(io.ErrClosedPipe)
	}
	sb.kill = kill
	return &RemoteStream{Stdout: fromServerR, Stdin: toServerW, Close: func() error { kill(); return nil }}, nil
}

func (f *fakeRemote) SandboxRunning(_ context.Context, id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.sandboxes[id]
	return sb != nil && sb.running, nil
}

func (f *fakeRemote) RemoveSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sb := f.sandboxes[id]; sb != nil && sb.kill != nil {
		sb.kill()
	}
	delete(f.sandboxes, id)
	f.removed = append(f.removed, id)
	return nil
}

func (f *fakeRemote) live() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sandboxes)
}

func TestRemoteContainerLifecycle(t *testing.T) {
	ctx := context.Background()
	rt := newFakeRemote(t)
	var mu sync.Mutex
	var kinds []string
	s, err := NewRemoteContainer(ctx, rt, ContainerOptions{Image: "img", Version: "test", IdleTimeout: 10 * time.Millisecond,
		Options: Options{OnEvent: func(e Event) { mu.Lock(); kinds = append(kinds, e.Kind); mu.Unlock() }}})
	if err != nil {
		t.Fatal(err)
	}
	if rt.live() != 0 {
		t.Fatal("a sandbox was made before the first call")
	}
	if _, err := s.Call(ctx, tools.WriteFileTool, json.RawMessage(`{"file_path":"a.txt","content":"kept"}`)); err != nil {
		t.Fatal(err)
	}
	if argv := rt.argv[0]; argv[0] != SidecarTarget || argv[1] != "serve" || !strings.Contains(strings.Join(argv, " "), "--root /workspace") {
		t.Errorf("serve command %q", argv)
	}
	in := s.Info()
	if in.WorkspaceDir != "" || in.ContainerID == "" || in.Link != LinkExec || s.WorkspaceDir() != "" {
		t.Errorf("info %+v", in)
	}
	// The idle timeout would lose the workspace: it does not apply.
	time.Sleep(50 * time.Millisecond)
	out, err := s.Call(ctx, tools.ReadFileTool, json.RawMessage(`{"file_path":"a.txt"}`))
	if err != nil || !strings.Contains(string(out), "kept") || rt.live() != 1 {
		t.Fatalf("after idling: %s, %v, %d sandboxes", out, err, rt.live())
	}
	// A broken stream into a running sandbox is replaced, workspace intact.
	rt.mu.Lock()
	for _, sb := range rt.sandboxes {
		sb.kill()
	}
	rt.mu.Unlock()
	out, err = s.Call(ctx, tools.ReadFileTool, json.RawMessage(`{"file_path":"a.txt"}`))
	if err != nil || !strings.Contains(string(out), "kept") {
		t.Fatalf("after the stream broke: %s, %v", out, err)
	}
	// Path confinement is the sidecar's, as on the engine.
	if _, err := s.Call(ctx, tools.ReadFileTool, json.RawMessage(`{"file_path":"../etc/passwd"}`)); !errors.Is(err, tools.ErrInvalidInput) {
		t.Errorf("../etc/passwd: %v, want a refusal", err)
	}
	if _, err := s.Clone(ctx); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("clone: %v, want ErrUnsupported", err)
	}
	if _, ok := s.Release(); ok {
		t.Error("a remote sandbox was released")
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if rt.live() != 0 || len(rt.removed) != 1 {
		t.Errorf("after close: %d sandboxes live, removed %v", rt.live(), rt.removed)
	}
	mu.Lock()
	defer mu.Unlock()
	got := strings.Join(kinds, ",")
	for _, want := range []string{EventCreated, EventStarted, EventReconnected, EventClosed} {
		if !strings.Contains(got, want) {
			t.Errorf("events %s lack %s", got, want)
		}
	}
	if strings.Contains(got, EventIdleCleanup) {
		t.Errorf("idle cleanup on a remote sandbox: %s", got)
	}
}

func TestRemoteContainerRefusesHostMounts(t *testing.T) {
	_, err := NewRemoteContainer(context.Background(), newFakeRemote(t), ContainerOptions{Image: "img",
		Options: Options{Mounts: []HostMount{{HostPath: "/home/me/src"}}}})
	if !errors.Is(err, errdefs.ErrUnsupported) || !strings.Contains(err.Error(), "/home/me/src") {
		t.Errorf("mount: %v", err)
	}
	if _, err := NewRemoteContainer(context.Background(), nil, ContainerOptions{}); !errors.Is(err, errdefs.ErrMissingRequired) {
		t.Errorf("no runtime: %v", err)
	}
}
