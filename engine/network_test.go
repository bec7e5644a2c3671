package engine

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/network"

	"github.com/podbot/podbot/errdefs"
)

func TestCreateNetworkSendsInternalBridge(t *testing.T) {
	f := newFakeEngine(t)
	var got network.CreateRequest
	f.handle("POST /networks/create", func(w http.ResponseWriter, r *http.Request) {
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Error(err)
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(network.CreateResponse{ID: "net1"})
	})
	c := f.connect()
	id, err := c.CreateNetwork(context.Background(), "podbot-net-x", NetworkOptions{Internal: true, Labels: map[string]string{"podbot.managed": "true"}})
	if err != nil || id != "net1" {
		t.Fatalf("CreateNetwork = %q, %v", id, err)
	}
	if got.Name != "podbot-net-x" || !got.Internal || got.Driver != "bridge" || got.Labels["podbot.managed"] != "true" {
		t.Fatalf("request = %+v", got)
	}
}

func TestNetworkErrorsAreClassified(t *testing.T) {
	f := newFakeEngine(t)
	// Podman answers a taken name with a 500; dockerd with a 409.
	f.handle("POST /networks/create", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"message":"network name podbot-net-x already used: network already exists"}`, http.StatusInternalServerError)
	})
	f.handle("DELETE /networks/podbot-net-gone", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"message":"network not found"}`, http.StatusNotFound)
	})
	c := f.connect()
	_, err := c.CreateNetwork(context.Background(), "podbot-net-x", NetworkOptions{Internal: true})
	if !errors.Is(err, errdefs.ErrAlreadyExists) {
		t.Fatalf("create: %v, want ErrAlreadyExists", err)
	}
	if err := c.RemoveNetwork(context.Background(), "podbot-net-gone"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("remove: %v, want ErrNotFound", err)
	}
}

func TestInspectNetworkReadsGateways(t *testing.T) {
	f := newFakeEngine(t)
	f.handle("GET /networks/n1", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(network.Inspect{ID: "n1", Name: "podbot-net-x", Internal: true,
			IPAM: network.IPAM{Config: []network.IPAMConfig{{Subnet: "10.89.0.0/24", Gateway: "10.89.0.1"}, {Subnet: "fd00::/64"}}}})
	})
	c := f.connect()
	n, err := c.InspectNetwork(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if !n.Internal || len(n.Gateways) != 1 || n.Gateways[0].String() != "10.89.0.1" {
		t.Fatalf("InspectNetwork = %+v", n)
	}
}

func TestConnectNetworkSendsAliases(t *testing.T) {
	f := newFakeEngine(t)
	var got network.ConnectOptions
	f.handle("POST /networks/n1/connect", func(w http.ResponseWriter, r *http.Request) {
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Error(err)
		}
	})
	c := f.connect()
	if err := c.ConnectNetwork(context.Background(), "n1", "c1", EndpointOptions{Aliases: []string{"podbot-egress"}}); err != nil {
		t.Fatal(err)
	}
	if got.Container != "c1" || got.EndpointConfig == nil || len(got.EndpointConfig.Aliases) != 1 || got.EndpointConfig.Aliases[0] != "podbot-egress" ||
		got.EndpointConfig.IPAMConfig != nil {
		t.Fatalf("connect request = %+v", got)
	}
	if err := c.ConnectNetwork(context.Background(), "n1", "c1", EndpointOptions{IPv4: netip.MustParseAddr("10.89.0.2")}); err != nil {
		t.Fatal(err)
	}
	if got.EndpointConfig.IPAMConfig == nil || got.EndpointConfig.IPAMConfig.IPv4Address != "10.89.0.2" {
		t.Fatalf("connect request with a fixed address = %+v", got.EndpointConfig)
	}
}

// TestCreateNetworkRetriesVanishedInterface: Podman fails a network create
// when a host interface disappears while it picks a subnet (another
// network going away at the same time); podbot tries again, a bounded
// number of times, and other errors are not retried.
func TestCreateNetworkRetriesVanishedInterface(t *testing.T) {
	vanished := `{"message":"route ip+net: no such network interface"}`
	t.Run("then succeeds", func(t *testing.T) {
		f := newFakeEngine(t)
		calls := 0
		f.handle("POST /networks/create", func(w http.ResponseWriter, r *http.Request) {
			if calls++; calls < 3 {
				http.Error(w, vanished, http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(network.CreateResponse{ID: "net1"})
		})
		id, err := f.connect().CreateNetwork(context.Background(), "podbot-net-x", NetworkOptions{Internal: true})
		if err != nil || id != "net1" || calls != 3 {
			t.Fatalf("CreateNetwork = %q, %v after %d calls; want net1 after 3", id, err, calls)
		}
	})
	t.Run("gives up", func(t *testing.T) {
		f := newFakeEngine(t)
		calls := 0
		f.handle("POST /networks/create", func(w http.ResponseWriter, r *http.Request) {
			calls++
			http.Error(w, vanished, http.StatusInternalServerError)
		})
		_, err := f.connect().CreateNetwork(context.Background(), "podbot-net-x", NetworkOptions{Internal: true})
		if err == nil || !strings.Contains(err.Error(), "no such network interface") || calls != networkCreateTries {
			t.Fatalf("CreateNetwork: %v after %d calls; want the engine's error after %d", err, calls, networkCreateTries)
		}
	})
	t.Run("other errors once", func(t *testing.T) {
		f := newFakeEngine(t)
		calls := 0
		f.handle("POST /networks/create", func(w http.ResponseWriter, r *http.Request) {
			calls++
			http.Error(w, `{"message":"network name podbot-net-x already used: network already exists"}`, http.StatusInternalServerError)
		})
		_, err := f.connect().CreateNetwork(context.Background(), "podbot-net-x", NetworkOptions{Internal: true})
		if !errors.Is(err, errdefs.ErrAlreadyExists) || calls != 1 {
			t.Fatalf("CreateNetwork: %v after %d calls; want ErrAlreadyExists after 1", err, calls)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		f := newFakeEngine(t)
		ctx, cancel := context.WithCancel(context.Background())
		f.handle("POST /networks/create", func(w http.ResponseWriter, r *http.Request) {
			cancel()
			http.Error(w, vanished, http.StatusInternalServerError)
		})
		if _, err := f.connect().CreateNetwork(ctx, "podbot-net-x", NetworkOptions{Internal: true}); !errors.Is(err, context.Canceled) {
			t.Fatalf("CreateNetwork after cancel: %v, want context.Canceled", err)
		}
	})
}
