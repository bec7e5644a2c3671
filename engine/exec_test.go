package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/podbot/podbot/errdefs"
)

// runningBox starts a container in the fake and returns a connection.
func runningBox(t *testing.T) (*fakeEngine, *Conn, string) {
	t.Helper()
	f := newFakeEngine(t)
	f.addImage("img")
	c := f.connect()
	id, err := c.CreateAndStart(context.Background(), "box", &container.Config{Image: "img"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f, c, id
}

func TestExecProtocolModeByteFidelity(t *testing.T) {
	_, c, id := runningBox(t)
	payload := make([]byte, 1<<20)
	if _, err := rand.Read(payload); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code, err := c.Exec(context.Background(), id, ExecOptions{Cmd: []string{"cat"}, Stdin: bytes.NewReader(payload), Stdout: &out, Stderr: &errb})
	if err != nil || code != 0 {
		t.Fatalf("Exec = %d, %v", code, err)
	}
	if !bytes.Equal(out.Bytes(), payload) {
		t.Errorf("stdout differs: %d bytes back for %d sent", out.Len(), len(payload))
	}
	if errb.Len() != 0 {
		t.Errorf("stderr got %d bytes", errb.Len())
	}
}

func TestExecDemultiplexes(t *testing.T) {
	_, c, id := runningBox(t)
	var out, errb bytes.Buffer
	code, err := c.Exec(context.Background(), id, ExecOptions{Cmd: []string{"both"}, Stdout: &out, Stderr: &errb})
	if err != nil || code != 0 || out.String() != "to stdout\n" || errb.String() != "to stderr\n" {
		t.Fatalf("Exec = %d, %v; stdout %q stderr %q", code, err, out.String(), errb.String())
	}
}

func TestExecPassesEnvWorkDirUser(t *testing.T) {
	_, c, id := runningBox(t)
	var out bytes.Buffer
	_, err := c.Exec(context.Background(), id, ExecOptions{Cmd: []string{"env"}, Env: []string{"A=1", "B="}, WorkDir: "/work", User: "agent", Stdout: &out})
	if err != nil || out.String() != "A=1,B=|/work|agent\n" {
		t.Fatalf("got %q, %v", out.String(), err)
	}
}

func TestExecExitCodes(t *testing.T) {
	_, c, id := runningBox(t)
	for in, want := range map[int]int{0: 0, 1: 1, 42: 42, 137: 137, 255: 255, 256: 255, 1000: 255, -1: 1, -255: 1} {
		for _, detach := range []bool{false, true} {
			code, err := c.Exec(context.Background(), id, ExecOptions{Cmd: []string{"code", strconv.Itoa(in)}, Detach: detach})
			if err != nil || code != want {
				t.Errorf("engine code %d (detach=%v): got %d, %v; want %d", in, detach, code, err, want)
			}
		}
	}
}

func TestExecWithoutExitCodeFails(t *testing.T) {
	_, c, id := runningBox(t)
	for _, detach := range []bool{false, true} {
		_, err := c.Exec(context.Background(), id, ExecOptions{Cmd: []string{"noexit"}, Detach: detach})
		if !errors.Is(err, errdefs.ErrExecFailed) || !strings.Contains(err.Error(), "without an exit code") {
			t.Errorf("detach=%v: got %v", detach, err)
		}
	}
}

func TestExecDetachedAttachesNothing(t *testing.T) {
	f, c, id := runningBox(t)
	var out bytes.Buffer
	code, err := c.Exec(context.Background(), id, ExecOptions{Cmd: []string{"both"}, Detach: true, TTY: true, Stdin: strings.NewReader("x"), Stdout: &out})
	if err != nil || code != 0 || out.Len() != 0 {
		t.Fatalf("got %d, %v, %q", code, err, out.String())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.execs {
		if e.opts.AttachStdin || e.opts.Tty {
			t.Errorf("detached exec created with %+v", e.opts)
		}
	}
}

func TestExecTTYResizes(t *testing.T) {
	f, c, id := runningBox(t)
	stdinR, stdinW := io.Pipe()
	resize := make(chan Size)
	var out bytes.Buffer
	done := make(chan struct{})
	var code int
	var err error
	go func() {
		defer close(done)
		code, err = c.Exec(context.Background(), id, ExecOptions{Cmd: []string{"lines"}, TTY: true, Stdin: stdinR, Stdout: &out,
			InitialSize: Size{Height: 24, Width: 80}, Resize: resize})
	}()
	resize <- Size{Height: 30, Width: 100}
	waitFor(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, e := range f.execs {
			return len(e.resizes) == 2
		}
		return false
	})
	_, _ = io.WriteString(stdinW, "hello\n")
	_ = stdinW.Close()
	<-done
	if err != nil || code != 0 {
		t.Fatalf("Exec = %d, %v", code, err)
	}
	if got := out.String(); got != "hello\nsizes=24x80 30x100\n" {
		t.Errorf("tty output %q", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.execs {
		if !e.opts.Tty || !e.opts.AttachStdin {
			t.Errorf("exec created with %+v", e.opts)
		}
	}
}

func TestExecResizeFailureIsNotFatal(t *testing.T) {
	f, c, id := runningBox(t)
	f.failResize = true
	var mu sync.Mutex
	var resizeErrs []error
	var out bytes.Buffer
	code, err := c.Exec(context.Background(), id, ExecOptions{Cmd: []string{"lines"}, TTY: true, Stdin: strings.NewReader("a\n"), Stdout: &out,
		InitialSize: Size{Height: 24, Width: 80},
		OnResizeError: func(err error) {
			mu.Lock()
			defer mu.Unlock()
			resizeErrs = append(resizeErrs, err)
		}})
	if err != nil || code != 0 || !strings.HasPrefix(out.String(), "a\n") {
		t.Fatalf("Exec = %d, %v, %q", code, err, out.String())
	}
	// The initial resize may still be retrying when the short command ends;
	// whatever was reported must be a classified resize failure.
	mu.Lock()
	defer mu.Unlock()
	for _, e := range resizeErrs {
		if !errors.Is(e, errdefs.ErrUnavailable) {
			t.Errorf("resize error %v", e)
		}
	}
}

func TestExecCancel(t *testing.T) {
	_, c, id := runningBox(t)
	ctx, cancel := context.WithCancel(context.Background())
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, id, ExecOptions{Cmd: []string{"block"}, Stdin: stdinR})
		errc <- err
	}()
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Exec did not return after cancellation")
	}
}

func TestExecErrors(t *testing.T) {
	f, c, id := runningBox(t)
	for _, opts := range []ExecOptions{{}, {Cmd: []string{""}}, {Cmd: []string{"true"}, Env: []string{"NOEQUALS"}}, {Cmd: []string{"true"}, Env: []string{"=v"}}} {
		if _, err := c.Exec(context.Background(), id, opts); !errors.Is(err, errdefs.ErrInvalidValue) {
			t.Errorf("%+v: got %v", opts, err)
		}
	}
	if n := f.callCount("POST /containers/{id}/exec"); n != 0 {
		t.Errorf("invalid execs reached the engine %d times", n)
	}
	if _, err := c.Exec(context.Background(), "missing", ExecOptions{Cmd: []string{"true"}}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("missing container: %v", err)
	}
	if err := c.Stop(context.Background(), id, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(context.Background(), id, ExecOptions{Cmd: []string{"true"}}); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("stopped container: %v", err)
	}
}

// waitFor polls cond until it holds; the test's own timeout bounds it.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		time.Sleep(time.Millisecond)
	}
}
