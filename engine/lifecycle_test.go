package engine

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/podbot/podbot/errdefs"
)

func TestCreateRefusesEmptyImageBeforeAnyCall(t *testing.T) {
	f := newFakeEngine(t)
	c := f.connect()
	for _, cfg := range []*container.Config{nil, {}, {Image: "  "}} {
		_, err := c.Create(context.Background(), "x", cfg, nil, nil)
		var ce *errdefs.ConfigError
		if !errors.As(err, &ce) || ce.Key != "image" || !errors.Is(err, errdefs.ErrMissingRequired) {
			t.Fatalf("got %v, want missing image", err)
		}
	}
	f.mu.Lock()
	calls := len(f.calls)
	f.mu.Unlock()
	if calls != 0 {
		t.Errorf("engine was called %d times", calls)
	}
}

func TestCreatePullsMissingImageWithProgressAndRetry(t *testing.T) {
	f := newFakeEngine(t)
	f.pullFailures = 2
	var mu sync.Mutex
	var events []PullEvent
	c := f.connect(WithPullProgress(func(e PullEvent) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}), WithPullRetry(3, time.Millisecond))
	id, err := c.Create(context.Background(), "box", &container.Config{Image: "debian:bookworm"}, nil, nil)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if id == "" {
		t.Fatal("no id")
	}
	if n := f.callCount("POST /images/create"); n != 3 {
		t.Errorf("pull attempts = %d, want 3", n)
	}
	mu.Lock()
	defer mu.Unlock()
	var sawProgress bool
	for _, e := range events {
		if e.Attempt != 3 || e.Ref != "debian:bookworm" {
			t.Errorf("event %+v from the wrong attempt", e)
		}
		if e.Status == "Downloading" && e.Layer == "abc123" && e.Current == 50 && e.Total == 100 {
			sawProgress = true
		}
	}
	if !sawProgress {
		t.Errorf("no download progress in %+v", events)
	}
}

func TestPullGivesUp(t *testing.T) {
	t.Run("after the last attempt", func(t *testing.T) {
		f := newFakeEngine(t)
		f.pullFailures = 10
		c := f.connect(WithPullRetry(2, 0))
		_, err := c.Create(context.Background(), "", &container.Config{Image: "debian"}, nil, nil)
		if !errors.Is(err, errdefs.ErrUnavailable) || f.callCount("POST /images/create") != 2 {
			t.Fatalf("got %v after %d pulls", err, f.callCount("POST /images/create"))
		}
	})
	t.Run("at once on a missing image", func(t *testing.T) {
		f := newFakeEngine(t)
		f.pullError = "manifest unknown: manifest unknown"
		c := f.connect(WithPullRetry(3, 0))
		_, err := c.Create(context.Background(), "", &container.Config{Image: "debian:nope"}, nil, nil)
		if !errors.Is(err, errdefs.ErrNotFound) || f.callCount("POST /images/create") != 1 {
			t.Fatalf("got %v after %d pulls", err, f.callCount("POST /images/create"))
		}
	})
	t.Run("on cancellation during backoff", func(t *testing.T) {
		f := newFakeEngine(t)
		f.pullFailures = 10
		c := f.connect(WithPullRetry(5, time.Hour))
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for f.callCount("POST /images/create") == 0 {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		err := c.Pull(ctx, "debian", nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestCreateMissingLocalImageNamesImageBuild(t *testing.T) {
	f := newFakeEngine(t)
	c := f.connect()
	_, err := c.Create(context.Background(), "", &container.Config{Image: "localhost/podbot-sandbox:latest"}, nil, nil)
	if !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), "podbot image build") {
		t.Fatalf("got %v", err)
	}
	if n := f.callCount("POST /images/create"); n != 0 {
		t.Errorf("a localhost image was pulled %d times", n)
	}
}

func TestIsLocalOnly(t *testing.T) {
	for ref, want := range map[string]bool{
		"localhost/podbot-sandbox:1.0": true,
		"localhost/x":                  true,
		"localhost:5000/x":             false,
		"debian:bookworm":              false,
		"docker.io/library/debian":     false,
		"quay.io/podman/stable":        false,
	} {
		if got := IsLocalOnly(ref); got != want {
			t.Errorf("IsLocalOnly(%q) = %v", ref, got)
		}
	}
}

func TestLifecycle(t *testing.T) {
	f := newFakeEngine(t)
	f.addImage("img")
	c := f.connect()
	ctx := context.Background()
	labels := map[string]string{"podbot.managed": "true", "podbot.session": "s1"}
	id, err := c.CreateAndStart(ctx, "box", &container.Config{Image: "img", Labels: labels}, &container.HostConfig{}, nil)
	if err != nil {
		t.Fatalf("CreateAndStart: %v", err)
	}
	if _, err := c.Create(ctx, "box", &container.Config{Image: "img"}, nil, nil); !errors.Is(err, errdefs.ErrAlreadyExists) {
		t.Errorf("duplicate name: got %v", err)
	}
	if _, err := c.Create(ctx, "other", &container.Config{Image: "img", Labels: map[string]string{"podbot.managed": "true"}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, "foreign", &container.Config{Image: "img"}, nil, nil); err != nil {
		t.Fatal(err)
	}

	rows, err := c.List(ctx, map[string]string{"podbot.managed": "true"}, false, false)
	if err != nil || len(rows) != 1 || rows[0].Name != "box" || rows[0].State != "running" {
		t.Fatalf("List running = %+v, %v", rows, err)
	}
	rows, err = c.List(ctx, map[string]string{"podbot.managed": "true"}, true, true)
	if err != nil || len(rows) != 2 || rows[0].SizeRw != 4096 {
		t.Fatalf("List all with size = %+v, %v", rows, err)
	}
	if n := f.callCount("GET /containers/json"); n != 2 {
		t.Errorf("List made %d list calls for 2 lists", n)
	}
	rows, _ = c.List(ctx, map[string]string{"podbot.session": "s1", "podbot.managed": ""}, true, false)
	if len(rows) != 1 || rows[0].ID != id {
		t.Errorf("List by two labels = %+v", rows)
	}

	info, err := c.Inspect(ctx, "box", true)
	if err != nil || !info.State.Running || info.SizeRw == nil || *info.SizeRw != 4096 {
		t.Fatalf("Inspect = %+v, %v", info, err)
	}
	if err := c.Remove(ctx, id, false); !errors.Is(err, errdefs.ErrConflict) || errors.Is(err, errdefs.ErrAlreadyExists) {
		t.Errorf("removing a running container without force: %v", err)
	}
	if err := c.Stop(ctx, id, 1500*time.Millisecond); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := c.Stop(ctx, id, time.Second); err != nil {
		t.Errorf("stopping a stopped container: %v", err)
	}
	if err := c.Remove(ctx, id, false); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := c.Inspect(ctx, id, false); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("inspect after remove: %v", err)
	}
	if err := c.Stop(ctx, id, time.Second); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("stop of a missing container: %v", err)
	}
}

func TestStopFallsBackToKill(t *testing.T) {
	f := newFakeEngine(t)
	f.addImage("img")
	f.handle("POST /containers/{id}/stop", func(w http.ResponseWriter, _ *http.Request) {
		apiError(w, http.StatusInternalServerError, "stop timed out")
	})
	c := f.connect()
	id, err := c.CreateAndStart(context.Background(), "box", &container.Config{Image: "img"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(context.Background(), id, 0); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if f.callCount("POST /containers/{id}/kill") != 1 {
		t.Error("no kill after a failed stop")
	}
	info, _ := c.Inspect(context.Background(), id, false)
	if info.State.Running || info.State.ExitCode != 137 {
		t.Errorf("state after kill: %+v", info.State)
	}
}

func TestStartAndWaitSeesAFastExit(t *testing.T) {
	f := newFakeEngine(t)
	f.addImage("img")
	c := f.connect()
	ctx := context.Background()
	// The fake exits "exit 42" the moment it starts: a wait subscribed after
	// start would miss it.
	id, err := c.Create(ctx, "fast", &container.Config{Image: "img", Cmd: []string{"exit", "42"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := c.StartAndWait(ctx, id)
	if err != nil {
		t.Fatalf("StartAndWait: %v", err)
	}
	st, ok := <-ch
	if !ok || st.Err != nil || st.Code != 42 {
		t.Fatalf("exit status = %+v, %v", st, ok)
	}
	if _, ok := <-ch; ok {
		t.Error("channel not closed after the status")
	}
	if _, err := c.Wait(ctx, "missing"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("wait on a missing container: %v", err)
	}
}

func TestCreateAndStartRemovesOnFailure(t *testing.T) {
	cases := []struct {
		name, startErr string
		reason         error
		hint           string
	}{
		{"privileged on dockerd", "failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: unable to apply caps: operation not permitted: unknown",
			errdefs.ErrUnsupported, "Podman"},
		{"cdi", "error gathering device information while adding custom device \"nvidia.com/gpu=all\": unresolvable CDI devices nvidia.com/gpu=all",
			errdefs.ErrUnsupported, "nvidia-ctk cdi generate"},
		{"generic", "boom", errdefs.ErrUnavailable, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeEngine(t)
			f.addImage("img")
			f.failStart = tc.startErr
			c := f.connect()
			_, err := c.CreateAndStart(context.Background(), "box", &container.Config{Image: "img"}, &container.HostConfig{Privileged: true}, nil)
			if !errors.Is(err, tc.reason) || !strings.Contains(err.Error(), tc.hint) {
				t.Fatalf("got %v, want reason %v and hint %q", err, tc.reason, tc.hint)
			}
			f.mu.Lock()
			left := len(f.containers)
			f.mu.Unlock()
			if left != 0 {
				t.Errorf("%d containers left behind", left)
			}
		})
	}
	t.Run("privileged message is plain", func(t *testing.T) {
		err := Classify("start", "e", "box", errors.New("runc create failed: unable to apply caps: operation not permitted"))
		if !strings.Contains(err.Error(), "dockerd on this host cannot run privileged containers") {
			t.Errorf("message %q", err)
		}
	})
}

func TestCreateCancelledLeavesNoContainer(t *testing.T) {
	f := newFakeEngine(t)
	f.addImage("img")
	ctx, cancel := context.WithCancel(context.Background())
	// The engine creates the container but the caller is interrupted
	// (Ctrl-C) before the answer arrives.
	f.handle("POST /containers/create", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.override["POST /containers/create"] = nil
		f.mu.Unlock()
		cancel()
		rec := &discardResponse{header: http.Header{}}
		f.create(rec, r)
		<-r.Context().Done()
	})
	c := f.connect()
	_, err := c.CreateAndStart(ctx, "box", &container.Config{Image: "img"}, nil, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want cancellation", err)
	}
	f.mu.Lock()
	left := len(f.containers)
	f.mu.Unlock()
	if left != 0 {
		t.Errorf("%d containers leaked", left)
	}
	if f.callCount("DELETE /containers/{id}") != 1 {
		t.Error("no cleanup remove")
	}
}

type discardResponse struct{ header http.Header }

func (d *discardResponse) Header() http.Header         { return d.header }
func (d *discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardResponse) WriteHeader(int)             {}

func TestCleanupContextSurvivesCancel(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	cancel()
	ctx, done := CleanupContext(parent)
	defer done()
	if ctx.Err() != nil {
		t.Fatal("cleanup context inherited the cancellation")
	}
	if ctx.Value(key{}) != "v" {
		t.Error("values lost")
	}
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > CleanupTimeout {
		t.Errorf("deadline %v, %v", dl, ok)
	}
}

func TestLogs(t *testing.T) {
	f := newFakeEngine(t)
	f.addImage("img")
	c := f.connect()
	ctx := context.Background()
	for _, tty := range []bool{false, true} {
		name := "plain"
		if tty {
			name = "tty"
		}
		id, err := c.Create(ctx, name, &container.Config{Image: "img", Tty: tty}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		f.containers[id].logs = []stdFrame{{1, "out 1\n"}, {2, "err 1\n"}, {1, "out 2\n"}}
		f.mu.Unlock()
		var out, errb bytes.Buffer
		var gotQuery string
		f.handle("GET /containers/{id}/logs", func(w http.ResponseWriter, r *http.Request) {
			gotQuery = r.URL.RawQuery
			f.logs(w, id)
		})
		if err := c.Logs(ctx, id, LogsOptions{Follow: true, Tail: 5}, &out, &errb); err != nil {
			t.Fatalf("Logs: %v", err)
		}
		if !strings.Contains(gotQuery, "follow=1") || !strings.Contains(gotQuery, "tail=5") {
			t.Errorf("query %q", gotQuery)
		}
		wantOut, wantErr := "out 1\nout 2\n", "err 1\n"
		if tty {
			wantOut, wantErr = "out 1\nerr 1\nout 2\n", ""
		}
		if out.String() != wantOut || errb.String() != wantErr {
			t.Errorf("tty=%v: stdout %q stderr %q", tty, out.String(), errb.String())
		}
	}
	if err := c.Logs(ctx, "missing", LogsOptions{}, nil, nil); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("logs of a missing container: %v", err)
	}
}

func TestCopyTar(t *testing.T) {
	f := newFakeEngine(t)
	f.addImage("img")
	c := f.connect()
	id, err := c.Create(context.Background(), "box", &container.Config{Image: "img"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: ".claude/creds.json", Mode: 0o600, Size: 2})
	_, _ = tw.Write([]byte("{}"))
	_ = tw.Close()
	if err := c.CopyTar(context.Background(), id, "/home/agent", &buf); err != nil {
		t.Fatalf("CopyTar: %v", err)
	}
	f.mu.Lock()
	got := strings.Join(f.containers[id].copied, ",")
	f.mu.Unlock()
	if got != "/home/agent:.claude/creds.json" {
		t.Errorf("copied %q", got)
	}
	for _, bad := range []string{"relative", "/a/../b", "/a/", ""} {
		if err := c.CopyTar(context.Background(), id, bad, &buf); !errors.Is(err, errdefs.ErrInvalidValue) {
			t.Errorf("CopyTar to %q: %v", bad, err)
		}
	}
}
