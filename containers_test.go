package podbot

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/api/types/container"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
)

// inspectFake answers /_ping and container inspect the way dockerd does:
// by full id, by exact name, then by unique id prefix.
type inspectFake struct {
	mu         sync.Mutex
	containers []fakeCtr
	inspected  []string
}

type fakeCtr struct {
	id, name string
	labels   map[string]string
	// state is the engine's state word; empty means running.
	state string
}

// status returns the state word and State.Running as the engine reports them.
func (c fakeCtr) status() (string, bool) {
	if c.state == "" {
		return "running", true
	}
	return c.state, c.state == "running"
}

var apiPrefix = regexp.MustCompile(`^/v[0-9.]+`)

func (f *inspectFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := apiPrefix.ReplaceAllString(r.URL.Path, "")
	if p == "/_ping" {
		w.Header().Set("Api-Version", "1.41")
		_, _ = io.WriteString(w, "OK")
		return
	}
	ref, ok := strings.CutSuffix(strings.TrimPrefix(p, "/containers/"), "/json")
	if !ok || !strings.HasPrefix(p, "/containers/") {
		http.Error(w, `{"message":"unexpected route"}`, http.StatusNotImplemented)
		return
	}
	f.mu.Lock()
	f.inspected = append(f.inspected, ref)
	f.mu.Unlock()
	var hits []fakeCtr
	for _, c := range f.containers {
		if c.id == ref || c.name == ref {
			hits = []fakeCtr{c}
			break
		}
		if strings.HasPrefix(c.id, ref) {
			hits = append(hits, c)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	switch len(hits) {
	case 0:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"message":"No such container: `+ref+`"}`)
	case 1:
		c := hits[0]
		_ = json.NewEncoder(w).Encode(container.InspectResponse{
			ContainerJSONBase: &container.ContainerJSONBase{ID: c.id, Name: "/" + c.name,
				State: &container.State{Status: "running"}, Created: "2026-01-02T03:04:05.5Z"},
			Config: &container.Config{Image: "img", Labels: c.labels},
		})
	default:
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"message":"multiple IDs found with provided prefix: `+ref+`"}`)
	}
}

func newInspectFake(t *testing.T, ctrs ...fakeCtr) (*inspectFake, *engine.Conn) {
	t.Helper()
	f := &inspectFake{containers: ctrs}
	return f, serveFakeEngine(t, f)
}

// serveFakeEngine serves h as an Engine API on a unix socket in a temp
// dir and returns a connection to it; both close when the test ends.
func serveFakeEngine(t *testing.T, h http.Handler) *engine.Conn {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "engine.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	conn, err := engine.Connect(context.Background(), engine.Endpoint{Scheme: engine.SchemeUnix, Address: sock, Raw: "unix://" + sock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestResolveContainer(t *testing.T) {
	managed := map[string]string{"podbot.managed": "true"}
	ctrs := []fakeCtr{
		{id: "abc111" + strings.Repeat("0", 58), name: "podbot-sandbox-one", labels: managed},
		{id: "abc222" + strings.Repeat("0", 58), name: "podbot-sandbox-two", labels: managed},
		{id: "def333" + strings.Repeat("0", 58), name: "someone-elses", labels: map[string]string{"podbot.managed": "false"}},
	}
	cases := []struct {
		name, ref    string
		any          bool
		wantName     string
		wantReason   error
		wantInMsg    string
		wantNoLookup bool
	}{
		{name: "by name", ref: "podbot-sandbox-one", wantName: "podbot-sandbox-one"},
		{name: "by full id", ref: ctrs[1].id, wantName: "podbot-sandbox-two"},
		{name: "by unique prefix", ref: "abc2", wantName: "podbot-sandbox-two"},
		{name: "ambiguous prefix", ref: "abc", wantReason: errdefs.ErrInvalidValue, wantInMsg: "multiple IDs"},
		{name: "unknown", ref: "nothing", wantReason: errdefs.ErrNotFound, wantInMsg: "podbot ps -a"},
		{name: "foreign refused", ref: "someone-elses", wantReason: errdefs.ErrRefused, wantInMsg: "--any"},
		{name: "foreign by prefix refused", ref: "def", wantReason: errdefs.ErrRefused, wantInMsg: "--any"},
		{name: "foreign with any", ref: "someone-elses", any: true, wantName: "someone-elses"},
		{name: "path smuggling refused", ref: "../images/json", wantReason: errdefs.ErrInvalidValue, wantNoLookup: true},
		{name: "empty refused", ref: "", wantReason: errdefs.ErrInvalidValue, wantNoLookup: true},
		{name: "query smuggling refused", ref: "x?all=1", wantReason: errdefs.ErrInvalidValue, wantNoLookup: true},
		{name: "overlong refused", ref: strings.Repeat("a", 200), wantReason: errdefs.ErrInvalidValue, wantNoLookup: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, conn := newInspectFake(t, ctrs...)
			c, err := ResolveContainer(context.Background(), conn, tc.ref, tc.any)
			if tc.wantReason != nil {
				if !errors.Is(err, tc.wantReason) || !errors.Is(err, errdefs.ErrContainer) {
					t.Fatalf("err = %v, want a container error with reason %v", err, tc.wantReason)
				}
				if !strings.Contains(err.Error(), tc.wantInMsg) {
					t.Errorf("error %q does not mention %q", err, tc.wantInMsg)
				}
			} else if err != nil {
				t.Fatalf("ResolveContainer(%q): %v", tc.ref, err)
			} else if c.Name != tc.wantName || c.ID == "" || c.State != "running" || c.Created.IsZero() {
				t.Errorf("resolved %+v, want name %s with id, state and creation time", c, tc.wantName)
			}
			f.mu.Lock()
			looked := len(f.inspected)
			f.mu.Unlock()
			if tc.wantNoLookup && looked != 0 {
				t.Errorf("an invalid reference reached the engine: %v", f.inspected)
			}
		})
	}
}
