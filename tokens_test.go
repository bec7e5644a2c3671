package podbot

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/gitcred"
	"github.com/podbot/podbot/github"
	"github.com/podbot/podbot/launchplan"
)

// tokenEngineFake answers ping, container list (label filters; running
// ones unless all=1), inspect (by name or id prefix) and start for the
// containers it holds; remove makes one vanish, setState stops or starts
// one. failStart makes every start fail; onStart runs as a start arrives.
type tokenEngineFake struct {
	mu        sync.Mutex
	ctrs      []fakeCtr
	lists     int
	starts    []string
	failStart bool
	onStart   func(name string)
	// events, when set, makes the fake serve /events: each name sent is
	// written as that container's destroy event.
	events chan string
}

func (f *tokenEngineFake) serveEvents(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	ch := f.events
	f.mu.Unlock()
	if ch == nil {
		w.WriteHeader(http.StatusNotImplemented)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	for {
		select {
		case name := <-ch:
			_ = json.NewEncoder(w).Encode(map[string]any{"Type": "container", "Action": "destroy",
				"Actor": map[string]any{"ID": name, "Attributes": map[string]string{"name": name}}})
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		}
	}
}

func (f *tokenEngineFake) setState(name, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.ctrs {
		if f.ctrs[i].name == name {
			f.ctrs[i].state = state
		}
	}
}

func (f *tokenEngineFake) remove(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, c := range f.ctrs {
		if c.name == name {
			f.ctrs = append(f.ctrs[:i], f.ctrs[i+1:]...)
			return
		}
	}
}

func (f *tokenEngineFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := apiPrefix.ReplaceAllString(r.URL.Path, "")
	if p == "/events" {
		f.serveEvents(w, r)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case p == "/_ping":
		w.Header().Set("Api-Version", "1.41")
		_, _ = io.WriteString(w, "OK")
	case p == "/containers/json":
		f.lists++
		var filt map[string]map[string]bool
		_ = json.Unmarshal([]byte(r.URL.Query().Get("filters")), &filt)
		var out []container.Summary
		all := r.URL.Query().Get("all") == "1" || r.URL.Query().Get("all") == "true"
		for _, c := range f.ctrs {
			state, running := c.status()
			ok := all || running
			for want := range filt["label"] {
				k, v, _ := strings.Cut(want, "=")
				if c.labels[k] != v {
					ok = false
				}
			}
			if ok {
				out = append(out, container.Summary{ID: c.id, Names: []string{"/" + c.name}, Labels: c.labels, State: state})
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	case strings.HasPrefix(p, "/containers/") && strings.HasSuffix(p, "/json"):
		ref := strings.TrimSuffix(strings.TrimPrefix(p, "/containers/"), "/json")
		for _, c := range f.ctrs {
			if strings.HasPrefix(c.id, ref) || c.name == ref {
				state, running := c.status()
				_ = json.NewEncoder(w).Encode(container.InspectResponse{
					ContainerJSONBase: &container.ContainerJSONBase{ID: c.id, Name: "/" + c.name, State: &container.State{Status: state, Running: running}},
					Config:            &container.Config{Labels: c.labels},
				})
				return
			}
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"message":"No such container: `+ref+`"}`)
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/containers/") && strings.HasSuffix(p, "/start"):
		ref := strings.TrimSuffix(strings.TrimPrefix(p, "/containers/"), "/start")
		for i, c := range f.ctrs {
			if c.id != ref && c.name != ref {
				continue
			}
			f.starts = append(f.starts, c.name)
			if f.onStart != nil {
				f.onStart(c.name)
			}
			if f.failStart {
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, `{"message":"error mounting the token directory"}`)
				return
			}
			f.ctrs[i].state = "running"
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"message":"No such container: `+ref+`"}`)
	default:
		w.WriteHeader(http.StatusNotImplemented)
		_, _ = io.WriteString(w, `{"message":"unexpected route"}`)
	}
}

func newTokenEngine(t *testing.T, ctrs ...fakeCtr) (*tokenEngineFake, *engine.Conn) {
	t.Helper()
	f := &tokenEngineFake{ctrs: ctrs}
	return f, serveFakeEngine(t, f)
}

// countingSource mints distinct long-lived tokens.
type countingSource struct {
	mu    sync.Mutex
	n     int
	repos [][]string
}

func (s *countingSource) InstallationToken(_ context.Context, repositories []string) (github.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	s.repos = append(s.repos, slices.Clone(repositories))
	return github.Token{Value: "ghs_test" + strings.Repeat("x", s.n), ExpiresAt: time.Now().Add(time.Hour)}, nil
}

var (
	tokenLabels = map[string]string{launchplan.LabelManaged: "true", launchplan.LabelGitHubToken: "true",
		launchplan.LabelGitHubRepo: "octo-org/demo", launchplan.LabelGitHubOrigin: "https://github.com"}
	// unscopedLabels are those of a container launched before tokens were
	// limited to a repository.
	unscopedLabels = map[string]string{launchplan.LabelManaged: "true", launchplan.LabelGitHubToken: "true"}
	plainLabels    = map[string]string{launchplan.LabelManaged: "true"}
)

func TestRunTokenDaemonRefuses(t *testing.T) {
	_, conn := newTokenEngine(t,
		fakeCtr{id: strings.Repeat("a", 64), name: "plain", labels: plainLabels},
		fakeCtr{id: strings.Repeat("b", 64), name: "foreign", labels: map[string]string{launchplan.LabelGitHubToken: "true"}},
	)
	src := &countingSource{}
	cases := []struct {
		name   string
		opts   TokenDaemonOptions
		class  error
		reason error
	}{
		{"neither container nor all", TokenDaemonOptions{Source: src}, errdefs.ErrConfig, errdefs.ErrConflict},
		{"both container and all", TokenDaemonOptions{Container: "plain", All: true, Source: src}, errdefs.ErrConfig, errdefs.ErrConflict},
		{"no GitHub App", TokenDaemonOptions{Container: "plain"}, errdefs.ErrConfig, errdefs.ErrMissingRequired},
		{"no token mount", TokenDaemonOptions{Container: "plain", Source: src, RuntimeDir: t.TempDir()}, errdefs.ErrContainer, errdefs.ErrRefused},
		{"not podbot's", TokenDaemonOptions{Container: "foreign", Source: src, RuntimeDir: t.TempDir()}, errdefs.ErrContainer, errdefs.ErrRefused},
		{"unknown container", TokenDaemonOptions{Container: "nothing", Source: src, RuntimeDir: t.TempDir()}, errdefs.ErrContainer, errdefs.ErrNotFound},
		{"relative runtime dir", TokenDaemonOptions{All: true, Source: src, RuntimeDir: "run"}, errdefs.ErrConfig, errdefs.ErrMissingRequired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := RunTokenDaemon(context.Background(), conn, tc.opts)
			if !errors.Is(err, tc.class) || !errors.Is(err, tc.reason) {
				t.Fatalf("err = %v, want class %v reason %v", err, tc.class, tc.reason)
			}
		})
	}
	if src.n != 0 {
		t.Errorf("a refused daemon minted %d tokens", src.n)
	}
}

// waitForFile polls until path exists or the test's deadline nears.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

func TestRunTokenDaemonOneContainer(t *testing.T) {
	f, conn := newTokenEngine(t, fakeCtr{id: strings.Repeat("c", 64), name: "podbot-claude-one", labels: tokenLabels})
	runtime := t.TempDir()
	done := make(chan error, 1)
	src := &countingSource{}
	go func() {
		// The id prefix resolves to the container; the directory is named after its name.
		done <- RunTokenDaemon(context.Background(), conn, TokenDaemonOptions{
			Container: "cccc", RuntimeDir: runtime, Source: src, CheckInterval: 5 * time.Millisecond,
		})
	}()
	file := filepath.Join(runtime, "podbot", "podbot-claude-one", "ghapp_token")
	waitForFile(t, file)
	src.mu.Lock()
	repos := slices.Clone(src.repos)
	src.mu.Unlock()
	if len(repos) == 0 || !slices.Equal(repos[0], []string{"demo"}) {
		t.Errorf("token requests asked for %v; want the labelled repository demo", repos)
	}
	if o, err := gitcred.ReadOrigin(filepath.Join(filepath.Dir(file), "git_origin")); err != nil || o.String() != "https://github.com" {
		t.Errorf("origin file: %v, %v; want the labelled origin", o, err)
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v; want 0600", err, st.Mode())
	}
	f.remove("podbot-claude-one")
	if err := <-done; err != nil {
		t.Fatalf("daemon returned %v after its container went away, want nil", err)
	}
	if _, err := os.Stat(filepath.Dir(file)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("token directory left behind: %v", err)
	}
}

// TestRunTokenDaemonFollowsEngineEvents: the daemon learns of a removal
// from the engine's event stream; polling is set to an hour, so only the
// stream can end it in time.
func TestRunTokenDaemonFollowsEngineEvents(t *testing.T) {
	f, conn := newTokenEngine(t, fakeCtr{id: strings.Repeat("7", 64), name: "podbot-claude-ev", labels: tokenLabels})
	f.events = make(chan string, 4)
	runtime := t.TempDir()
	done := make(chan error, 1)
	go func() {
		done <- RunTokenDaemon(context.Background(), conn, TokenDaemonOptions{
			Container: "podbot-claude-ev", RuntimeDir: runtime, Source: &countingSource{}, CheckInterval: time.Hour,
		})
	}()
	file := filepath.Join(runtime, "podbot", "podbot-claude-ev", "ghapp_token")
	waitForFile(t, file)
	f.remove("podbot-claude-ev")
	f.events <- strings.Repeat("7", 64)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("daemon returned %v after its container was removed, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the daemon did not act on the engine's destroy event")
	}
	if _, err := os.Stat(filepath.Dir(file)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("token directory left behind: %v", err)
	}
}

// TestRunTokenDaemonRefusesUnscoped: a container that names no repository
// gets no token, since it would carry the installation's full grant.
func TestRunTokenDaemonRefusesUnscoped(t *testing.T) {
	_, conn := newTokenEngine(t, fakeCtr{id: strings.Repeat("b", 64), name: "old", labels: unscopedLabels})
	src := &countingSource{}
	err := RunTokenDaemon(context.Background(), conn, TokenDaemonOptions{Container: "old", RuntimeDir: t.TempDir(), Source: src})
	if !errors.Is(err, errdefs.ErrRefused) || !strings.Contains(err.Error(), launchplan.LabelGitHubRepo) {
		t.Fatalf("RunTokenDaemon of an unscoped container = %v; want a refusal naming %s", err, launchplan.LabelGitHubRepo)
	}
	if src.n != 0 {
		t.Errorf("%d tokens were minted for it", src.n)
	}
}

func TestRunTokenDaemonAll(t *testing.T) {
	f, conn := newTokenEngine(t,
		fakeCtr{id: strings.Repeat("d", 64), name: "with-token", labels: tokenLabels},
		fakeCtr{id: strings.Repeat("e", 64), name: "without-token", labels: plainLabels},
		fakeCtr{id: strings.Repeat("9", 64), name: "unscoped", labels: unscopedLabels},
	)
	runtime := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunTokenDaemon(ctx, conn, TokenDaemonOptions{
			All: true, RuntimeDir: runtime, Source: &countingSource{},
			CheckInterval: 5 * time.Millisecond, ListInterval: 5 * time.Millisecond,
		})
	}()
	waitForFile(t, filepath.Join(runtime, "podbot", "with-token", "ghapp_token"))
	// A container launched later is picked up by the next listing.
	f.mu.Lock()
	f.ctrs = append(f.ctrs, fakeCtr{id: strings.Repeat("f", 64), name: "later", labels: tokenLabels})
	f.mu.Unlock()
	waitForFile(t, filepath.Join(runtime, "podbot", "later", "ghapp_token"))
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("daemon returned %v on shutdown, want nil", err)
	}
	if _, err := os.Stat(filepath.Join(runtime, "podbot", "without-token")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a container without the token label got a token directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(runtime, "podbot", "unscoped")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a container that names no repository got a token directory: %v", err)
	}
	// Shutting down keeps the directories: the tokens stay valid for the containers.
	if _, err := os.Stat(filepath.Join(runtime, "podbot", "with-token", "ghapp_token")); err != nil {
		t.Errorf("token removed on shutdown: %v", err)
	}
}
