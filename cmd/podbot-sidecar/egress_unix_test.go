//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/errdefs"
)

// With --loaded the proxy records the digest of each policy it puts in
// force, so podbot's egressnet.ApplyPolicy returns only once the new
// policy decides: the very first request after it is allowed, and a
// policy denying everything again is in force at once after the next.
func TestRunEgressConfirmsLoaded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "outside") }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	d := egressnet.DirsAt(filepath.Join(t.TempDir(), "egress", "podbot-pool-p-0123456789ab"))
	d.Vault, d.Trust = "", ""
	if err := d.Make(); err != nil {
		t.Fatal(err)
	}
	deny := &egress.Policy{Resolve: map[string]string{"plain.test": "127.0.0.1"}}
	if err := egress.WritePolicyFile(d.PolicyPath(), deny); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan net.Addr, 1)
	stderr := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- runEgress(ctx, egressOptions{listen: "127.0.0.1:0", policy: d.PolicyPath(), log: d.LogPath(), loaded: d.LoadedPath(),
			ready: func(a net.Addr) { addrc <- a }}, stderr)
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("runEgress: %v (%s)", err, stderr.String())
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr.String()}), DisableKeepAlives: true}}
	status := func() int {
		resp, err := c.Get(fmt.Sprintf("http://plain.test:%d/", port))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status(); got != 403 {
		t.Fatalf("under the deny-all policy: %d", got)
	}
	r, _ := egress.ParseRule("plain.test:" + strconv.Itoa(port))
	allow := &egress.Policy{Rules: []egress.Rule{r}, Resolve: deny.Resolve}
	for i, c := range []struct {
		pol  *egress.Policy
		want int
	}{{allow, 200}, {deny, 403}, {allow, 200}} {
		// The last step pokes the proxy (SIGHUP, as podbot does) instead
		// of waiting for its poll.
		var poke func(context.Context) error
		if i == 2 {
			poke = func(context.Context) error { return syscall.Kill(os.Getpid(), syscall.SIGHUP) }
		}
		if err := egressnet.ApplyPolicy(ctx, d, c.pol, 10*time.Second, poke); err != nil {
			t.Fatalf("step %d: %v (%s)", i, err, stderr.String())
		}
		if got := status(); got != c.want {
			t.Fatalf("step %d: the first request after ApplyPolicy got %d, want %d", i, got, c.want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A proxy that never confirms is a timeout, not a silent success.
	if err := egressnet.ApplyPolicy(context.Background(), d, allow, 200*time.Millisecond, nil); err != nil {
		t.Fatalf("the last digest recorded was this policy's: %v", err)
	}
	if err := egressnet.ApplyPolicy(context.Background(), d, deny, 200*time.Millisecond, nil); !errors.Is(err, errdefs.ErrTimeout) {
		t.Fatalf("with the proxy gone: %v, want a timeout", err)
	}
}
