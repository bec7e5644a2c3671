package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/api/types/container"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

func TestPickCPUs(t *testing.T) {
	avail := []int{0, 1, 2, 3}
	tests := []struct {
		name string
		used map[int]int
		n    int
		seed uint32
		want []int
	}{
		{"the least used", map[int]int{0: 2, 1: 1, 2: 1, 3: 3}, 1, 0, []int{1}},
		{"ties go round from the seed", map[int]int{0: 1, 1: 1}, 1, 3, []int{3}},
		{"ties from another seed", map[int]int{0: 1, 1: 1}, 1, 2, []int{2}},
		{"two, sorted", map[int]int{1: 5}, 2, 1, []int{2, 3}},
		{"wrapping round", nil, 2, 3, []int{0, 3}},
		{"more than there are", nil, 9, 0, avail},
		{"none", nil, 0, 0, nil},
	}
	for _, tt := range tests {
		if got := pickCPUs(avail, tt.used, tt.n, tt.seed); !slices.Equal(got, tt.want) {
			t.Errorf("%s: pickCPUs = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCheckCPUSet(t *testing.T) {
	for _, ok := range []string{"", "auto", "none", "0", "0-1,3"} {
		if err := checkCPUSet(ok); err != nil {
			t.Errorf("checkCPUSet(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"all", "1-0", "0,,1", "5000"} {
		err := checkCPUSet(bad)
		var ce *errdefs.ConfigError
		if !errors.As(err, &ce) || ce.Key != "tools.cpuset" || !strings.Contains(ce.Msg, bad) {
			t.Errorf("checkCPUSet(%q) = %v, want a tools.cpuset ConfigError naming it", bad, err)
		}
	}
}

// cpusetEngine answers the Engine API routes a session's container start
// uses. It records each create's cpuset and refuses pinned creates when
// refusePinned is set, as an engine confined to fewer CPUs does.
type cpusetEngine struct {
	mu           sync.Mutex
	refusePinned bool
	pinned       []string // labels of running containers' podbot.cpuset
	creates      []string // CpusetCpus of each create
	listErr      bool
}

func (f *cpusetEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	path := r.URL.Path[strings.Index(r.URL.Path[1:], "/")+1:] // drop /v1.xx
	switch {
	case r.URL.Path == "/_ping":
		w.Header().Set("Api-Version", "1.41")
	case strings.HasPrefix(path, "/images/"):
		w.Write([]byte(`{"Id":"sha256:1"}`))
	case path == "/containers/json":
		if f.listErr {
			http.Error(w, `{"message":"list failed"}`, http.StatusInternalServerError)
			return
		}
		var list []container.Summary
		for _, p := range f.pinned {
			list = append(list, container.Summary{Labels: map[string]string{launchplan.LabelCPUSet: p}})
		}
		json.NewEncoder(w).Encode(list)
	case path == "/containers/create":
		var body struct{ HostConfig container.HostConfig }
		json.NewDecoder(r.Body).Decode(&body)
		f.creates = append(f.creates, body.HostConfig.CpusetCpus)
		if f.refusePinned && body.HostConfig.CpusetCpus != "" {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"message":"Requested CPUs are not available - requested 1, available: 0"}`))
			return
		}
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"Id":"c1"}`))
	case strings.HasSuffix(path, "/start"):
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

func newCPUSetRuntime(t *testing.T, f *cpusetEngine, cpuset string, hostCPUs []int) *engineRuntime {
	t.Helper()
	rt := newFakeEngineRuntime(t, f, ContainerOptions{Image: "localhost/tools:1", CPUSet: cpuset})
	rt.hostCPUs = func() []int { return hostCPUs }
	return rt
}

// newFakeEngineRuntime is an engine runtime of opts (with a stand-in
// sidecar) on an Engine API that h serves on a unix socket.
func newFakeEngineRuntime(t *testing.T, h http.Handler, opts ContainerOptions) *engineRuntime {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "engine.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	conn, err := engine.Connect(context.Background(), engine.Endpoint{Raw: "unix://" + sock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	sidecar := filepath.Join(dir, "podbot-sidecar")
	if err := os.WriteFile(sidecar, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	opts.SidecarPath = sidecar
	rt, err := newEngineRuntime(conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func TestStartPinsTheSessionContainer(t *testing.T) {
	spec := containerSpec{sessionID: "s1", name: "podbot-tools-s1", workspaceDir: t.TempDir()}
	tests := []struct {
		name     string
		cpuset   string
		hostCPUs []int
		pinned   []string
		listErr  bool
		want     string
	}{
		{"auto takes the least used CPU", "", []int{0, 1, 2}, []string{"0", "2", "0-1,garbage"}, false, "1"},
		{"auto leaves a limit as large as the host alone", "auto", []int{0}, nil, false, ""},
		{"auto without the engine's list stays unpinned", "auto", []int{0, 1}, nil, true, ""},
		{"none", "none", []int{0, 1, 2}, nil, false, ""},
		{"a configured list", "3,2", []int{0, 1}, nil, false, "2-3"},
	}
	for _, tt := range tests {
		f := &cpusetEngine{pinned: tt.pinned, listErr: tt.listErr}
		rt := newCPUSetRuntime(t, f, tt.cpuset, tt.hostCPUs)
		if _, err := rt.start(context.Background(), spec); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !slices.Equal(f.creates, []string{tt.want}) {
			t.Errorf("%s: creates with cpusets %q, want [%q]", tt.name, f.creates, tt.want)
		}
	}
}

func TestStartUnpinnedWhenTheEngineRefusesItsChoice(t *testing.T) {
	spec := containerSpec{sessionID: "s1", name: "podbot-tools-s1", workspaceDir: t.TempDir()}
	f := &cpusetEngine{refusePinned: true}
	rt := newCPUSetRuntime(t, f, "auto", []int{0, 1})
	if _, err := rt.start(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if len(f.creates) != 2 || f.creates[0] == "" || f.creates[1] != "" {
		t.Errorf("creates with cpusets %q, want one pinned then one unpinned", f.creates)
	}
	// The next container of the session (after a recreation) does not try
	// again.
	if _, err := rt.start(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if len(f.creates) != 3 || f.creates[2] != "" {
		t.Errorf("creates with cpusets %q, want the third unpinned at once", f.creates)
	}

	// A list the operator configured is not second-guessed: the refusal
	// is the answer.
	f = &cpusetEngine{refusePinned: true}
	rt = newCPUSetRuntime(t, f, "1", []int{0, 1})
	_, err := rt.start(context.Background(), spec)
	if err == nil || !strings.Contains(err.Error(), "Requested CPUs are not available") || len(f.creates) != 1 {
		t.Errorf("configured cpuset: err %v, creates %q", err, f.creates)
	}
}
