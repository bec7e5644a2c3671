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

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/pool"
	"github.com/podbot/podbot/sandbox"
)

// egressEngineFake answers the Engine API calls of an allowlist
// sandbox's egress plumbing the way dockerd does, recording what was
// created and deleted; failProxy fails the proxy's create.
type egressEngineFake struct {
	mu        sync.Mutex
	failProxy bool
	networks  []string            // names created, with Internal
	created   map[string][]string // container name ("" for netlock) -> Cmd
	modes     map[string]string   // container name -> NetworkMode
	deleted   []string            // DELETE paths
}

func (f *egressEngineFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := apiPrefix.ReplaceAllString(r.URL.Path, "")
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case p == "/_ping":
		w.Header().Set("Api-Version", "1.41")
		_, _ = io.WriteString(w, "OK")
	case p == "/version":
		_, _ = io.WriteString(w, `{"Version":"27.0.0","ApiVersion":"1.41"}`)
	case p == "/info":
		_, _ = io.WriteString(w, `{}`)
	case strings.HasPrefix(p, "/images/"):
		_, _ = io.WriteString(w, `{"Id":"sha256:abc","Config":{"User":""}}`)
	case p == "/networks/create":
		var body network.CreateRequest
		_ = json.NewDecoder(r.Body).Decode(&body)
		internal := ""
		if body.Internal {
			internal = " internal"
		}
		f.networks = append(f.networks, body.Name+internal)
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"Id":"net1"}`)
	case strings.HasPrefix(p, "/networks/") && strings.HasSuffix(p, "/connect"):
		w.WriteHeader(http.StatusOK)
	case strings.HasPrefix(p, "/networks/") && r.Method == http.MethodGet:
		_, _ = io.WriteString(w, `{"Id":"net1","Name":"n","Internal":true,"IPAM":{"Config":[{"Subnet":"10.9.0.0/24","Gateway":"10.9.0.1"}]}}`)
	case p == "/containers/create":
		name := r.URL.Query().Get("name")
		var body struct {
			container.Config
			HostConfig container.HostConfig
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if f.created == nil {
			f.created, f.modes = map[string][]string{}, map[string]string{}
		}
		f.created[name], f.modes[name] = body.Cmd, string(body.HostConfig.NetworkMode)
		if f.failProxy && strings.HasPrefix(name, egressnet.ProxyPrefix) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"message":"proxy boom"}`)
			return
		}
		id := "netlock1"
		if name != "" {
			id = name
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"Id":"`+id+`"}`)
	case strings.HasSuffix(p, "/start"):
		w.WriteHeader(http.StatusNoContent)
	case strings.HasSuffix(p, "/wait"):
		_, _ = io.WriteString(w, `{"StatusCode":0}`)
	case strings.HasPrefix(p, "/containers/") && strings.HasSuffix(p, "/json"):
		name := strings.TrimSuffix(strings.TrimPrefix(p, "/containers/"), "/json")
		sandboxName := strings.TrimPrefix(name, egressnet.ProxyPrefix)
		_ = json.NewEncoder(w).Encode(container.InspectResponse{
			ContainerJSONBase: &container.ContainerJSONBase{ID: name, Name: "/" + name, State: &container.State{Status: "running", Running: true}},
			NetworkSettings: &container.NetworkSettings{Networks: map[string]*network.EndpointSettings{
				egressnet.NetworkName(sandboxName): {IPAddress: "10.9.0.2"}}},
		})
	case r.Method == http.MethodDelete:
		f.deleted = append(f.deleted, p)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotImplemented)
		_, _ = io.WriteString(w, `{"message":"unexpected route `+p+`"}`)
	}
}

// toolsAllowlistConfig is a configuration with tools.network = "allowlist"
// and one network.allow rule, agent sandboxes' mode none.
func toolsAllowlistConfig() config.Config {
	cfg := config.Default()
	cfg.Tools.Image = "localhost/tools:1"
	cfg.Tools.Network = ToolsNetworkAllowlist
	cfg.Network.Mode = config.NetworkNone
	cfg.Network.Presets = nil
	cfg.Network.Allow = []string{"allowed.example:443"}
	return cfg
}

// fakeSidecar is an executable stand-in for podbot-sidecar.
func fakeSidecar(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "podbot-sidecar")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestToolsEngineNetworkLifecycle: with tools.network = "allowlist" an
// engine tool session's container gets an allowlist agent sandbox's
// plumbing named after it (internal network, proxy on it, policy file
// with network.allow's rule and no agent preset), the proxy variables
// and the labels podbot network reads; netlock runs in its namespace once
// it runs; Remove takes proxy, network and directory away.
func TestToolsEngineNetworkLifecycle(t *testing.T) {
	f := &egressEngineFake{}
	conn := serveFakeEngine(t, f)
	sidecar, rt := fakeSidecar(t), t.TempDir()
	copts := sandbox.ContainerOptions{Network: ToolsNetworkAllowlist}
	if err := withToolsEgress(conn, ToolSessionOptions{Config: toolsAllowlistConfig(), SidecarPath: sidecar, RuntimeDir: rt}, &copts); err != nil {
		t.Fatal(err)
	}
	if copts.Network != "none" || copts.EngineNetwork == nil {
		t.Fatalf("options: network %q, engine network %v; want none with the hook", copts.Network, copts.EngineNetwork)
	}
	nw := copts.EngineNetwork
	name := sandbox.ContainerName("0123456789abcdef", 1)
	plan := launchplan.Plan{Name: name, Image: "localhost/tools:1", Network: "none", Labels: map[string]string{}}
	if err := nw.Prepare(t.Context(), &plan); err != nil {
		t.Fatal(err)
	}
	dirs, _ := egressnet.DirsFor(rt, name)
	if plan.Network != egressnet.NetworkName(name) || !slices.Contains(plan.Env, "HTTPS_PROXY=http://10.9.0.2:3128") {
		t.Errorf("plan network %q env %q; want the internal network and the proxy's address", plan.Network, plan.Env)
	}
	for k, v := range map[string]string{egressnet.LabelMode: "allowlist", LabelEgressDir: dirs.Root,
		egressnet.LabelProxyAddr: "10.9.0.2", egressnet.LabelName: name} {
		if plan.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, plan.Labels[k], v)
		}
	}
	pol, err := egressnet.ReadPolicy(dirs.PolicyPath())
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Rules) != 1 || pol.Rules[0].String() != "allowed.example:443" || pol.Rules[0].Source != EgressSourceConfig {
		t.Errorf("policy rules %+v, want network.allow's alone", pol.Rules)
	}
	if !slices.Equal(f.networks, []string{egressnet.NetworkName(name) + " internal"}) {
		t.Errorf("networks created: %q", f.networks)
	}
	if _, ok := f.created[egressnet.ProxyName(name)]; !ok {
		t.Errorf("no proxy created: %v", f.created)
	}

	var hc container.HostConfig
	nw.HostConfig(plan, &hc)
	if !slices.Equal(hc.DNS, egressnet.SandboxDNS) || hc.Sysctls["net.ipv6.conf.all.disable_ipv6"] != "1" {
		t.Errorf("host config: dns %q sysctls %v", hc.DNS, hc.Sysctls)
	}

	if err := nw.Started(t.Context(), plan, "tool1"); err != nil {
		t.Fatal(err)
	}
	if f.modes[""] != "container:tool1" || !slices.Equal(f.created[""], []string{"netlock", "--block", "10.9.0.1"}) {
		t.Errorf("netlock: mode %q cmd %q", f.modes[""], f.created[""])
	}

	if err := nw.Remove(t.Context(), name); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/containers/netlock1", "/containers/" + egressnet.ProxyName(name), "/networks/" + egressnet.NetworkName(name)} {
		if !slices.Contains(f.deleted, want) {
			t.Errorf("not deleted: %s (deleted %q)", want, f.deleted)
		}
	}
	if _, err := os.Stat(dirs.Root); !os.IsNotExist(err) {
		t.Errorf("egress directory after Remove: %v", err)
	}
}

// TestToolsEngineNetworkFailedPrepareLeavesNothing: a proxy the engine
// cannot create fails Prepare, and the network and directory it made are
// gone.
func TestToolsEngineNetworkFailedPrepareLeavesNothing(t *testing.T) {
	f := &egressEngineFake{failProxy: true}
	conn := serveFakeEngine(t, f)
	rt := t.TempDir()
	copts := sandbox.ContainerOptions{Network: ToolsNetworkAllowlist}
	if err := withToolsEgress(conn, ToolSessionOptions{Config: toolsAllowlistConfig(), SidecarPath: fakeSidecar(t), RuntimeDir: rt}, &copts); err != nil {
		t.Fatal(err)
	}
	name := sandbox.ContainerName("0123456789abcdef", 1)
	plan := launchplan.Plan{Name: name, Image: "localhost/tools:1", Labels: map[string]string{}}
	err := copts.EngineNetwork.Prepare(t.Context(), &plan)
	if err == nil || !strings.Contains(err.Error(), "proxy boom") {
		t.Fatalf("Prepare: %v, want the proxy's failure", err)
	}
	if !slices.Contains(f.deleted, "/networks/"+egressnet.NetworkName(name)) {
		t.Errorf("network not removed: deleted %q", f.deleted)
	}
	dirs, _ := egressnet.DirsFor(rt, name)
	if _, err := os.Stat(dirs.Root); !os.IsNotExist(err) {
		t.Errorf("egress directory after a failed Prepare: %v", err)
	}
}

// TestToolsAllowlistOnEngineOptions: tools.network = "allowlist" opens an
// engine session (lazily: no engine call); other networks are left
// alone; [[secrets]], a missing sidecar and warm pools are refused with
// typed errors, the pool refusal naming the fix.
func TestToolsAllowlistOnEngineOptions(t *testing.T) {
	cfg := toolsAllowlistConfig()
	sidecar := fakeSidecar(t)
	conn := serveFakeEngine(t, &egressEngineFake{})
	s, err := NewToolSession(t.Context(), conn, ToolSessionOptions{Config: cfg, SidecarPath: sidecar, WorkspaceRoot: t.TempDir()})
	if err != nil {
		t.Fatalf("allowlist on the engine: %v", err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	copts := sandbox.ContainerOptions{Network: "bridge"}
	if err := withToolsEgress(conn, ToolSessionOptions{Config: cfg, SidecarPath: sidecar}, &copts); err != nil || copts.EngineNetwork != nil || copts.Network != "bridge" {
		t.Errorf("bridge: %v, %+v", err, copts)
	}

	withSecrets := cfg
	withSecrets.Secrets = []config.Secret{{}}
	if _, err := NewToolSession(t.Context(), conn, ToolSessionOptions{Config: withSecrets, SidecarPath: sidecar, WorkspaceRoot: t.TempDir()}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("[[secrets]]: %v, want ErrUnsupported", err)
	}
	if _, err := NewToolSession(t.Context(), conn, ToolSessionOptions{Config: cfg, SidecarPath: filepath.Join(t.TempDir(), "missing"), WorkspaceRoot: t.TempDir()}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("no sidecar: %v, want ErrNotFound", err)
	}

	// A pool whose template, or the configuration, says allowlist.
	for _, spec := range []pool.Spec{{Name: "evals", Kind: pool.KindTools, Size: 1}, {Name: "evals", Kind: pool.KindTools, Size: 1, Network: ToolsNetworkAllowlist}} {
		c := cfg
		if spec.Network != "" {
			c.Tools.Network = "none"
		}
		_, err := NewToolSession(t.Context(), conn, ToolSessionOptions{Config: c, SidecarPath: sidecar, WorkspaceRoot: t.TempDir(), Pool: &spec})
		var ce *errdefs.ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, errdefs.ErrUnsupported) || ce.Key != "tools.network" || !strings.Contains(ce.Msg, "drop --pool") {
			t.Errorf("pool %+v with allowlist: %v, want a tools.network ConfigError naming the fix", spec, err)
		}
		_, err = NewPoolBackend(conn, PoolOptions{Config: c, SidecarPath: sidecar, WorkspaceRoot: t.TempDir()}).Create(t.Context(), spec)
		if !errors.As(err, &ce) || !errors.Is(err, errdefs.ErrUnsupported) {
			t.Errorf("filling pool %+v with allowlist: %v, want the same refusal", spec, err)
		}
		_, err = AdoptToolSession(t.Context(), conn, ToolSessionOptions{Config: c, SidecarPath: sidecar, Pool: &spec}, ToolRunning{})
		if !errors.As(err, &ce) || !errors.Is(err, errdefs.ErrUnsupported) {
			t.Errorf("adopting with pool %+v and allowlist: %v, want the same refusal", spec, err)
		}
	}
}
