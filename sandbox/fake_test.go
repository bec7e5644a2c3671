package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/sidecarsock"
	"github.com/podbot/podbot/tools"
)

// fakeRuntime stands in for the engine: a "container" is a record, and its
// sidecar is the real tools MCP server over the session's workspace
// directory, connected by pipes.
type fakeRuntime struct {
	mu         sync.Mutex
	n          int
	containers map[string]*fakeContainer
	starts     int
	specs      []containerSpec
	attaches   int
	removed    []string
	// withLink makes containers serve on their link directory's socket,
	// as podbot-sidecar init serve --listen does.
	withLink bool
	// silentLink gives containers a link directory but no sidecar on it.
	silentLink bool
	linkMissed int
}

type fakeContainer struct {
	id, name, dir string
	running       bool
	kills         []func()
}

func newFakeRuntime() *fakeRuntime { return &fakeRuntime{containers: map[string]*fakeContainer{}} }

func (f *fakeRuntime) start(_ context.Context, spec containerSpec) (startedContainer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	f.starts++
	f.specs = append(f.specs, spec)
	c := &fakeContainer{id: fmt.Sprintf("c%d", f.n), name: spec.name, dir: spec.workspaceDir, running: true}
	f.containers[c.id] = c
	if spec.linkDir != "" && !f.silentLink {
		if err := c.serveLink(spec.linkDir); err != nil {
			return startedContainer{}, err
		}
	}
	return startedContainer{id: c.id, name: c.name}, nil
}

func (f *fakeRuntime) linkOwner() (int, int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return os.Getuid(), os.Getgid(), (f.withLink || f.silentLink) && f.linkMissed == 0
}

func (f *fakeRuntime) linkMissing() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.linkMissed++
}

func (f *fakeRuntime) attach(_ context.Context, id string) (*stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	if c == nil || !c.running {
		return nil, &errdefs.ContainerError{Op: "exec create", Container: id, Reason: errdefs.ErrNotFound, Msg: "no such container"}
	}
	f.attaches++
	ws, err := tools.NewWorkspace(c.dir)
	if err != nil {
		return nil, err
	}
	toServerR, toServerW := io.Pipe()
	fromServerR, fromServerW := io.Pipe()
	srv := tools.NewMCPServer(ws, "test")
	go func() {
		_ = srv.Run(context.Background(), &tools.LineTransport{Reader: toServerR, Writer: fromServerW})
		ws.Close()
	}()
	// Mirror the engine runtime: stdout is copied into a pipe, and done
	// closes before the copy's end is seen.
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		_, err := io.Copy(pw, fromServerR)
		close(done)
		if err == nil {
			err = io.EOF
		}
		pw.CloseWithError(err)
	}()
	kill := func() {
		fromServerW.CloseWithError(io.EOF)
		toServerR.CloseWithError(io.ErrClosedPipe)
	}
	c.kills = append(c.kills, kill)
	return &stream{stdout: pr, stdin: toServerW, done: done, stderr: newTailBuffer(stderrTail),
		closeFn: func() error { pr.Close(); kill(); return nil }}, nil
}

func (f *fakeRuntime) running(_ context.Context, id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	return c != nil && c.running, nil
}

func (f *fakeRuntime) remove(_ context.Context, id, _ string) error {
	f.mu.Lock()
	c := f.containers[id]
	delete(f.containers, id)
	if c != nil {
		f.removed = append(f.removed, id)
	}
	f.mu.Unlock()
	if c != nil {
		for _, k := range c.kills {
			k()
		}
	}
	return nil
}

// kill ends a container from outside, as `podman kill` would.
func (f *fakeRuntime) kill(id string) {
	f.mu.Lock()
	c := f.containers[id]
	if c != nil {
		c.running = false
	}
	f.mu.Unlock()
	if c != nil {
		for _, k := range c.kills {
			k()
		}
	}
}

// breakStream ends the sidecar stream but leaves the container running.
func (f *fakeRuntime) breakStream(id string) {
	f.mu.Lock()
	c := f.containers[id]
	f.mu.Unlock()
	if c != nil {
		for _, k := range c.kills {
			k()
		}
	}
}

func (f *fakeRuntime) live() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.containers)
}

var errNoEvent = errors.New("event not seen")

// serveLink takes the link key and serves the tools on the link socket.
func (c *fakeContainer) serveLink(dir string) error {
	key, err := sidecarsock.TakeKey(dir)
	if err != nil {
		return err
	}
	l, err := sidecarsock.Listen(dir)
	if err != nil {
		return err
	}
	ws, err := tools.NewWorkspace(c.dir)
	if err != nil {
		l.Close()
		return err
	}
	srv := tools.NewMCPServer(ws, "test")
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			go func() {
				defer conn.Close()
				if sidecarsock.Server(conn, key) != nil {
					return
				}
				if ss, err := srv.Connect(context.Background(), &tools.LineTransport{Reader: conn, Writer: conn, DirectRead: true}, nil); err == nil {
					ss.Wait()
				}
			}()
		}
	}()
	c.kills = append(c.kills, func() {
		l.Close()
		mu.Lock()
		for _, conn := range conns {
			conn.Close()
		}
		mu.Unlock()
	})
	return nil
}
