package podbot

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// EgressCheckName is the doctor check that an allowlist sandbox's internal
// network can be made.
const EgressCheckName = "egress network"

// ProxyCheckName is the doctor check that the egress proxy starts.
const ProxyCheckName = "egress proxy"

// proxyListenWait bounds how long doctor waits for a started proxy to say
// that it listens.
const proxyListenWait = 5 * time.Second

// proxyListening is the line the proxy logs once it accepts connections.
const proxyListening = "egress proxy listening"

// doctorEgress makes and removes a throwaway internal network, the first
// thing an allowlist launch does, and says whether the proxy has what it
// needs (podbot-sidecar runs it from the sandbox image).
func doctorEgress(ctx context.Context, conn *engine.Conn, sidecar string, add func(string, CheckStatus, string, string)) bool {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := egressnet.NetworkPrefix + "doctor-" + hex.EncodeToString(b[:])
	internal, err := internalNetworks(ctx, conn)
	if err != nil {
		add(EgressCheckName, CheckFail, err.Error(), "check the engine's logs")
		return false
	}
	id, err := conn.CreateNetwork(ctx, name, engine.NetworkOptions{Internal: internal,
		Labels: map[string]string{launchplan.LabelManaged: "true", egressnet.LabelRole: "doctor"}})
	if err != nil {
		add(EgressCheckName, CheckFail, "cannot make a sandbox network: "+err.Error(),
			"allowlist sandboxes (network.mode) need internal bridge networks; check the engine's network backend, or set network.mode = \"open\"")
		return false
	}
	info, ierr := conn.InspectNetwork(ctx, id)
	cctx, cancel := engine.CleanupContext(ctx)
	defer cancel()
	rerr := conn.RemoveNetwork(cctx, id)
	switch {
	case ierr != nil:
		add(EgressCheckName, CheckFail, "cannot inspect the internal network: "+ierr.Error(), "check the engine's logs")
		return false
	case len(info.Gateways) == 0 || info.Internal != internal:
		add(EgressCheckName, CheckFail, fmt.Sprintf("the engine made %s without a gateway or with internal=%v", name, info.Internal),
			"podbot needs the gateway to keep an allowlist sandbox away from the engine host; use Podman (netavark) or dockerd's bridge driver")
		return false
	case rerr != nil:
		add(EgressCheckName, CheckWarn, "made an internal network but could not remove it: "+rerr.Error(), "remove it with `podbot prune`")
	case sidecar == "":
		add(EgressCheckName, CheckWarn, "internal networks work, but podbot-sidecar (the egress proxy) is missing: allowlist sandboxes cannot start",
			"install podbot-sidecar next to podbot (make build), or set PODBOT_SIDECAR_PATH")
	default:
		kind := "internal networks work"
		if !internal {
			kind = "per-sandbox networks work (Podman: routed, closed by netlock in the sandbox)"
		}
		add(EgressCheckName, CheckOK, fmt.Sprintf("%s (gateway %s); the proxy runs %s from the sandbox image", kind, info.Gateways[0], sidecar), "")
	}
	return true
}

// doctorProxy starts a throwaway egress proxy the way an allowlist launch
// does (prepareEgress: an empty policy in a temporary directory, an
// internal network, the hardened proxy container from image), waits until
// it logs that it listens, and removes it, its network and the directory.
func doctorProxy(ctx context.Context, conn *engine.Conn, image, sidecar string, add func(string, CheckStatus, string, string)) {
	if sidecar == "" {
		return // doctorEgress said so
	}
	if _, err := conn.API().ImageInspect(ctx, image); err != nil {
		add(ProxyCheckName, CheckWarn, "not tried: the proxy runs from "+image+", which is not present",
			"build it with `podbot image build --bootstrap`, then run podbot doctor again")
		return
	}
	start := time.Now()
	tmp, err := os.MkdirTemp("", "podbot-doctor-")
	if err != nil {
		add(ProxyCheckName, CheckFail, "cannot make a temporary directory: "+err.Error(), "check $TMPDIR")
		return
	}
	defer os.RemoveAll(tmp)
	var b [4]byte
	_, _ = rand.Read(b[:])
	plan := launchplan.Plan{Name: "podbot-doctor-" + hex.EncodeToString(b[:]), Image: image,
		Labels: map[string]string{launchplan.LabelManaged: "true"},
		Egress: launchplan.Egress{Mode: egress.ModeAllowlist}}
	// prepareEgress removes what it made when it fails.
	es, err := prepareEgress(ctx, conn, &plan, sidecar, tmp, nil)
	var rerr error
	if err == nil {
		err = waitProxyListening(ctx, conn, es.proxyID)
		cctx, cancel := engine.CleanupContext(ctx)
		defer cancel()
		rerr = es.teardown(cctx, conn)
	}
	took := time.Since(start).Round(time.Millisecond)
	switch {
	case err != nil:
		add(ProxyCheckName, CheckFail, fmt.Sprintf("the egress proxy did not start (%s): %v", took, err),
			"check that podbot-sidecar ("+sidecar+") is the same version as podbot and runs in "+image+"; see the engine's logs, or set network.mode = \"open\"")
	case rerr != nil:
		add(ProxyCheckName, CheckWarn, fmt.Sprintf("the egress proxy started in %s but could not be removed: %v", took, rerr), "remove it with `podbot prune`")
	default:
		add(ProxyCheckName, CheckOK, fmt.Sprintf("a throwaway proxy started, listened and was removed in %s", took), "")
	}
}

// waitProxyListening polls the proxy's logs, bounded, until it says that
// it listens; a proxy that exits or stays silent is an error quoting its
// last log lines.
func waitProxyListening(ctx context.Context, conn *engine.Conn, id string) error {
	ctx, cancel := context.WithTimeout(ctx, proxyListenWait)
	defer cancel()
	var out bytes.Buffer
	for {
		out.Reset()
		lb := &limitedBuffer{buf: &out, max: maxStepOutput}
		if err := conn.Logs(ctx, id, engine.LogsOptions{Tail: 20}, lb, lb); err == nil && strings.Contains(out.String(), proxyListening) {
			return nil
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return &errdefs.ContainerError{Op: "start egress proxy", Endpoint: conn.Endpoint().String(), Container: id,
				Reason: errdefs.ErrUnavailable, Msg: fmt.Sprintf("the proxy did not report listening within %s: %s", proxyListenWait, lastLines(out.String(), 5))}
		}
	}
}
