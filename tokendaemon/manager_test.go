package tokendaemon

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestManagerRunsOneDaemonPerContainer(t *testing.T) {
	clock := newClock()
	runtime := t.TempDir()
	src := &fakeSource{clock: clock, ttl: time.Hour}
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, nil))

	// A container "goes away" once its daemon has written its token file,
	// so every daemon writes, sees its container gone and cleans up.
	var mu sync.Mutex
	seen := map[string]bool{}
	alive := func(_ context.Context, id string) (bool, error) {
		dir, err := TokenDir(runtime, id)
		if err != nil {
			return false, err
		}
		mu.Lock()
		defer mu.Unlock()
		if seen[id] {
			return false, nil
		}
		if _, err := os.Stat(filepath.Join(dir, TokenFileName)); err == nil {
			seen[id] = true
			return false, nil
		}
		return true, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var m *Manager
	listCalls := 0
	list := func(context.Context) ([]Target, error) {
		listCalls++
		switch {
		case listCalls > 100000:
			cancel()
			return nil, errors.New("runaway")
		case listCalls == 2:
			return nil, errors.New("engine hiccup")
		}
		ids := []string{"alpha", "beta", "../escape"}
		if listCalls >= 3 {
			ids = append(ids, "gamma")
		}
		mu.Lock()
		defer mu.Unlock()
		var live []Target
		for _, id := range ids {
			if !seen[id] {
				live = append(live, Target{ID: id, Repositories: testRepos})
			}
		}
		if len(live) == 1 && listCalls >= 3 && len(m.Running()) == 0 {
			cancel() // only the refused id is left
		}
		return live, nil
	}
	m, err := NewManager(ManagerOptions{
		Daemon: Options{RuntimeDir: runtime, Source: src, Clock: clock, Logger: logger},
		List:   list, Alive: alive,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(ctx); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if listCalls > 100000 {
		t.Fatal("manager did not settle")
	}
	for _, id := range []string{"alpha", "beta", "gamma"} {
		if !seen[id] {
			t.Errorf("no token file was written for %s", id)
		}
		if _, err := os.Stat(filepath.Join(runtime, "podbot", id)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s's token dir remains after its container went away", id)
		}
	}
	logMu.Lock()
	out := logs.String()
	logMu.Unlock()
	if strings.Count(out, "cannot keep a token for this container") != 1 {
		t.Errorf("the bad id should be reported exactly once: %s", out)
	}
	if !strings.Contains(out, "engine hiccup") || strings.Contains(out, "ghs_tok") {
		t.Errorf("unexpected logs: %s", out)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(runtime), "escape")); err == nil {
		t.Error("a directory was created outside the runtime dir")
	}
}

func TestNewManagerChecksOptions(t *testing.T) {
	src := &fakeSource{clock: newClock()}
	list := func(context.Context) ([]Target, error) { return nil, nil }
	alive := func(context.Context, string) (bool, error) { return true, nil }
	if _, err := NewManager(ManagerOptions{Daemon: Options{RuntimeDir: "", Source: src}, List: list, Alive: alive}); err == nil {
		t.Error("an empty runtime dir must be refused")
	}
	if _, err := NewManager(ManagerOptions{Daemon: Options{RuntimeDir: t.TempDir()}, List: list, Alive: alive}); err == nil {
		t.Error("a missing source must be refused")
	}
	if _, err := New(Options{ContainerID: "x", RuntimeDir: t.TempDir()}); err == nil {
		t.Error("New without Source and Alive must fail")
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
