package engine

import (
	"context"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
)

// NetworkOptions are the inputs of CreateNetwork.
type NetworkOptions struct {
	// Internal makes a network with no route out of the engine's host: its
	// containers reach each other and nothing else through it.
	Internal bool
	// Labels are the network's labels.
	Labels map[string]string
}

// NetworkInfo is the engine's view of a network, as far as podbot needs it.
type NetworkInfo struct {
	// ID and Name identify the network.
	ID, Name string
	// Internal says the network has no route out.
	Internal bool
	// Labels are the network's labels.
	Labels map[string]string
	// Gateways are the gateway addresses of its subnets: on a bridge
	// network, the engine host's own address on that bridge.
	Gateways []netip.Addr
}

// CreateNetwork creates a bridge network named name and returns its id. It
// works on dockerd and on Podman's compatibility API alike (both take the
// "bridge" driver and the Internal flag). An existing name is an error with
// reason ErrAlreadyExists.
func (c *Conn) CreateNetwork(ctx context.Context, name string, opts NetworkOptions) (string, error) {
	create := network.CreateOptions{Driver: "bridge", Internal: opts.Internal, Labels: opts.Labels}
	resp, err := c.api.NetworkCreate(ctx, name, create)
	for try := 1; err != nil && interfaceVanished(err) && try < networkCreateTries; try++ {
		// Podman lists the host's interfaces to pick a free subnet; one
		// removed meanwhile (another network or container going away)
		// fails the whole create, though nothing was made. Try again.
		c.logger().Debug("engine lost a host interface while creating a network; trying again", "network", name, "err", err)
		select {
		case <-ctx.Done():
			return "", c.classify("create network", name, ctx.Err())
		case <-time.After(time.Duration(try) * 100 * time.Millisecond):
		}
		resp, err = c.api.NetworkCreate(ctx, name, create)
	}
	if err != nil {
		return "", c.classify("create network", name, err)
	}
	if resp.Warning != "" {
		c.logger().Warn("engine warning on network create", "network", name, "warning", truncate(resp.Warning, maxErrorText))
	}
	return resp.ID, nil
}

// networkCreateTries bounds the attempts of a network create that the
// engine failed because a host interface vanished while it looked.
const networkCreateTries = 4

// interfaceVanished reports whether err is Podman's answer when a host
// network interface disappeared while it chose a subnet for a new network
// (Go's net package: "route ip+net: no such network interface"). The
// create made nothing, so trying again is safe.
func interfaceVanished(err error) bool {
	return strings.Contains(err.Error(), "no such network interface")
}

// RemoveNetwork removes a network. A missing network is an error with
// reason ErrNotFound; one that still has containers attached, ErrConflict
// (dockerd) or ErrUnavailable (Podman).
func (c *Conn) RemoveNetwork(ctx context.Context, idOrName string) error {
	if err := c.api.NetworkRemove(ctx, idOrName); err != nil {
		return c.classify("remove network", idOrName, err)
	}
	return nil
}

// InspectNetwork returns the engine's view of a network.
func (c *Conn) InspectNetwork(ctx context.Context, idOrName string) (NetworkInfo, error) {
	r, err := c.api.NetworkInspect(ctx, idOrName, network.InspectOptions{})
	if err != nil {
		return NetworkInfo{}, c.classify("inspect network", idOrName, err)
	}
	return networkInfo(r.ID, r.Name, r.Internal, r.Labels, r.IPAM), nil
}

func networkInfo(id, name string, internal bool, labels map[string]string, ipam network.IPAM) NetworkInfo {
	n := NetworkInfo{ID: id, Name: name, Internal: internal, Labels: labels}
	for _, cfg := range ipam.Config {
		if a, err := netip.ParseAddr(cfg.Gateway); err == nil {
			n.Gateways = append(n.Gateways, a.Unmap())
		}
	}
	return n
}

// ListNetworks returns the networks carrying every given label (an empty
// value matches the key alone), sorted by name.
func (c *Conn) ListNetworks(ctx context.Context, labels map[string]string) ([]NetworkInfo, error) {
	args := filters.NewArgs()
	for k, v := range labels {
		if v == "" {
			args.Add("label", k)
		} else {
			args.Add("label", k+"="+v)
		}
	}
	rows, err := c.api.NetworkList(ctx, network.ListOptions{Filters: args})
	if err != nil {
		return nil, c.classify("list networks", "", err)
	}
	out := make([]NetworkInfo, 0, len(rows))
	for _, r := range rows {
		out = append(out, networkInfo(r.ID, r.Name, r.Internal, r.Labels, r.IPAM))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// EndpointOptions say how a container joins a network.
type EndpointOptions struct {
	// Aliases are further names of the container on the network.
	Aliases []string
	// IPv4 asks for a fixed address (kept across restarts); the zero Addr
	// lets the engine choose. dockerd refuses a fixed address on a network
	// without a user-configured subnet; Podman accepts it.
	IPv4 netip.Addr
}

// ConnectNetwork attaches a container to a further network.
func (c *Conn) ConnectNetwork(ctx context.Context, networkID, containerID string, opts EndpointOptions) error {
	es := &network.EndpointSettings{Aliases: opts.Aliases}
	if opts.IPv4.IsValid() {
		es.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: opts.IPv4.String()}
	}
	if err := c.api.NetworkConnect(ctx, networkID, containerID, es); err != nil {
		return c.classify("connect network", containerID, err)
	}
	return nil
}

// DisconnectNetwork detaches a container from a network.
func (c *Conn) DisconnectNetwork(ctx context.Context, networkID, containerID string, force bool) error {
	if err := c.api.NetworkDisconnect(ctx, networkID, containerID, force); err != nil {
		return c.classify("disconnect network", containerID, err)
	}
	return nil
}
