package podbot

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// proxyEngineFake answers what doctor's egress checks ask: a Docker
// engine whose networks work and whose container create fails.
type proxyEngineFake struct {
	mu      sync.Mutex
	removed []string
}

func (f *proxyEngineFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
		_, _ = io.WriteString(w, `{"Id":"sha256:abc"}`)
	case p == "/networks/create":
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"Id":"net1"}`)
	case strings.HasPrefix(p, "/networks/") && r.Method == http.MethodGet:
		_, _ = io.WriteString(w, `{"Id":"net1","Name":"n","Internal":true,"IPAM":{"Config":[{"Subnet":"10.9.0.0/24","Gateway":"10.9.0.1"}]}}`)
	case strings.HasPrefix(p, "/networks/") && r.Method == http.MethodDelete:
		f.removed = append(f.removed, p)
		w.WriteHeader(http.StatusNoContent)
	case p == "/containers/create":
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"message":"proxy boom: no such runtime"}`)
	case strings.HasPrefix(p, "/containers/") && r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"message":"No such container"}`)
	default:
		w.WriteHeader(http.StatusNotImplemented)
		_, _ = io.WriteString(w, `{"message":"unexpected route"}`)
	}
}

func TestDoctorProxyFailsWithTheEnginesMessage(t *testing.T) {
	f := &proxyEngineFake{}
	conn := serveFakeEngine(t, f)
	t.Setenv("TMPDIR", t.TempDir())
	var checks []Check
	add := func(name string, st CheckStatus, detail, fix string) {
		checks = append(checks, Check{Name: name, Status: st, Detail: detail, Fix: fix})
	}
	if !doctorEgress(t.Context(), conn, "/usr/bin/podbot-sidecar", add) {
		t.Fatalf("the network check failed: %+v", checks)
	}
	doctorProxy(t.Context(), conn, "img", "/usr/bin/podbot-sidecar", add)
	if len(checks) != 2 || checks[1].Name != ProxyCheckName {
		t.Fatalf("checks: %+v", checks)
	}
	c := checks[1]
	if c.Status != CheckFail || !strings.Contains(c.Detail, "proxy boom: no such runtime") || c.Fix == "" {
		t.Fatalf("proxy check: %+v", c)
	}
	// Both throwaway networks (the network check's and the proxy's) are gone.
	if len(f.removed) != 2 || f.removed[0] != "/networks/net1" || !strings.HasPrefix(f.removed[1], "/networks/podbot-net-podbot-doctor-") {
		t.Errorf("networks removed: %v", f.removed)
	}
}

func TestDoctorProxyWithoutSidecarOrImage(t *testing.T) {
	conn := serveFakeEngine(t, &proxyEngineFake{})
	var checks []Check
	add := func(name string, st CheckStatus, detail, fix string) {
		checks = append(checks, Check{Name: name, Status: st, Detail: detail, Fix: fix})
	}
	doctorProxy(t.Context(), conn, "img", "", add)
	if len(checks) != 0 {
		t.Fatalf("without a sidecar the proxy check ran: %+v", checks)
	}
}
