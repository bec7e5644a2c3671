package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/api/types/container"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// netEngine answers the Engine API routes a session's container start and
// removal use, recording every create and delete; failCreate fails the
// create as an engine that cannot make the container does.
type netEngine struct {
	mu         sync.Mutex
	failCreate bool
	creates    []netCreate
	deleted    []string
}

// netCreate is what one container create asked for.
type netCreate struct {
	network string
	env     []string
	dns     []string
}

func (f *netEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	path := r.URL.Path[strings.Index(r.URL.Path[1:], "/")+1:] // drop /v1.xx
	switch {
	case r.URL.Path == "/_ping":
		w.Header().Set("Api-Version", "1.41")
	case strings.HasPrefix(path, "/images/"):
		w.Write([]byte(`{"Id":"sha256:1"}`))
	case path == "/containers/create":
		var body struct {
			container.Config
			HostConfig container.HostConfig
		}
		json.NewDecoder(r.Body).Decode(&body)
		f.creates = append(f.creates, netCreate{network: string(body.HostConfig.NetworkMode), env: body.Env, dns: body.HostConfig.DNS})
		if f.failCreate {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"message":"create boom"}`))
			return
		}
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"Id":"c1"}`))
	case strings.HasSuffix(path, "/start"):
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodDelete && strings.HasPrefix(path, "/containers/"):
		f.deleted = append(f.deleted, strings.TrimPrefix(path, "/containers/"))
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

// fakeNetwork is an EngineNetwork that records its calls.
type fakeNetwork struct {
	mu          sync.Mutex
	calls       []string
	failPrepare bool
	failStarted bool
}

func (n *fakeNetwork) record(call string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, call)
}

func (n *fakeNetwork) Prepare(_ context.Context, plan *launchplan.Plan) error {
	n.record("prepare " + plan.Name)
	if n.failPrepare {
		return &errdefs.ContainerError{Op: "prepare", Reason: errdefs.ErrUnavailable, Msg: "prepare boom"}
	}
	plan.Network = "podbot-net-" + plan.Name
	plan.Env = append(plan.Env, "HTTPS_PROXY=http://10.0.0.2:3128")
	return nil
}

func (n *fakeNetwork) HostConfig(_ launchplan.Plan, hc *container.HostConfig) {
	hc.DNS = []string{"127.0.0.1"}
}

func (n *fakeNetwork) Started(_ context.Context, plan launchplan.Plan, id string) error {
	n.record("started " + plan.Name + " " + id)
	if n.failStarted {
		return &errdefs.ContainerError{Op: "netlock", Reason: errdefs.ErrExecFailed, Msg: "netlock boom"}
	}
	return nil
}

func (n *fakeNetwork) Remove(_ context.Context, name string) error {
	n.record("remove " + name)
	return nil
}

func (n *fakeNetwork) got() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.calls)
}

// TestEngineNetworkWrapsEveryContainer: with ContainerOptions.EngineNetwork
// a container is created on the network Prepare made, with its
// environment and host config, Started runs on it once it runs, and
// removing it removes the network's plumbing by the container's name.
func TestEngineNetworkWrapsEveryContainer(t *testing.T) {
	f, nw := &netEngine{}, &fakeNetwork{}
	rt := newFakeEngineRuntime(t, f, ContainerOptions{Image: "localhost/tools:1", Network: "none", CPUSet: CPUSetNone, EngineNetwork: nw})
	spec := containerSpec{sessionID: "s1", name: "podbot-tools-s1-1", workspaceDir: t.TempDir()}
	sc, err := rt.start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.creates) != 1 {
		t.Fatalf("creates: %+v", f.creates)
	}
	c := f.creates[0]
	if c.network != "podbot-net-podbot-tools-s1-1" || !slices.Contains(c.env, "HTTPS_PROXY=http://10.0.0.2:3128") || !slices.Equal(c.dns, []string{"127.0.0.1"}) {
		t.Errorf("the container was created with network %q, env %q, dns %q; want Prepare's and HostConfig's", c.network, c.env, c.dns)
	}
	if want := []string{"prepare podbot-tools-s1-1", "started podbot-tools-s1-1 c1"}; !slices.Equal(nw.got(), want) {
		t.Errorf("network calls %q, want %q", nw.got(), want)
	}
	if err := rt.remove(context.Background(), sc.id, sc.name); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.deleted, []string{"c1"}) || nw.got()[2] != "remove podbot-tools-s1-1" {
		t.Errorf("after remove: deleted %q, network calls %q", f.deleted, nw.got())
	}
}

// TestEngineNetworkFailedStartsLeaveNothing: a start that fails after
// Prepare (the create, or Started) removes the container and the
// network's plumbing; a failed Prepare (which cleans up after itself)
// creates nothing.
func TestEngineNetworkFailedStartsLeaveNothing(t *testing.T) {
	spec := containerSpec{sessionID: "s1", name: "podbot-tools-s1-1", workspaceDir: t.TempDir()}
	cases := []struct {
		name        string
		engine      *netEngine
		nw          *fakeNetwork
		wantCalls   []string
		wantDeleted []string
		wantCreates int
		wantErr     string
	}{
		{"prepare fails", &netEngine{}, &fakeNetwork{failPrepare: true},
			[]string{"prepare podbot-tools-s1-1"}, nil, 0, "prepare boom"},
		{"create fails", &netEngine{failCreate: true}, &fakeNetwork{},
			[]string{"prepare podbot-tools-s1-1", "remove podbot-tools-s1-1"}, nil, 1, "create boom"},
		{"started fails", &netEngine{}, &fakeNetwork{failStarted: true},
			[]string{"prepare podbot-tools-s1-1", "started podbot-tools-s1-1 c1", "remove podbot-tools-s1-1"}, []string{"c1"}, 1, "netlock boom"},
	}
	for _, tc := range cases {
		rt := newFakeEngineRuntime(t, tc.engine, ContainerOptions{Image: "localhost/tools:1", Network: "none", CPUSet: CPUSetNone, EngineNetwork: tc.nw})
		_, err := rt.start(context.Background(), spec)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.wantErr)
		}
		var ce *errdefs.ContainerError
		if !errors.As(err, &ce) {
			t.Errorf("%s: err %T is not a ContainerError", tc.name, err)
		}
		if !slices.Equal(tc.nw.got(), tc.wantCalls) {
			t.Errorf("%s: network calls %q, want %q", tc.name, tc.nw.got(), tc.wantCalls)
		}
		if !slices.Equal(tc.engine.deleted, tc.wantDeleted) || len(tc.engine.creates) != tc.wantCreates {
			t.Errorf("%s: deleted %q after %d creates", tc.name, tc.engine.deleted, len(tc.engine.creates))
		}
	}
}

// TestRemoveWithoutEngineNetwork: without the hook, remove removes the
// container alone, and a missing one is fine.
func TestRemoveWithoutEngineNetwork(t *testing.T) {
	f := &netEngine{}
	rt := newFakeEngineRuntime(t, f, ContainerOptions{Image: "localhost/tools:1", CPUSet: CPUSetNone})
	if err := rt.remove(context.Background(), "c9", "podbot-tools-s1-1"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.deleted, []string{"c9"}) {
		t.Errorf("deleted %q", f.deleted)
	}
}
