package podbot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/launchplan"
)

// EgressCheckName is the doctor check that an allowlist sandbox's internal
// network can be made.
const EgressCheckName = "egress network"

// doctorEgress makes and removes a throwaway internal network, the first
// thing an allowlist launch does, and says whether the proxy has what it
// needs (podbot-sidecar runs it from the sandbox image).
func doctorEgress(ctx context.Context, conn *engine.Conn, sidecar string, add func(string, CheckStatus, string, string)) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := egressnet.NetworkPrefix + "doctor-" + hex.EncodeToString(b[:])
	internal, err := internalNetworks(ctx, conn)
	if err != nil {
		add(EgressCheckName, CheckFail, err.Error(), "check the engine's logs")
		return
	}
	id, err := conn.CreateNetwork(ctx, name, engine.NetworkOptions{Internal: internal,
		Labels: map[string]string{launchplan.LabelManaged: "true", egressnet.LabelRole: "doctor"}})
	if err != nil {
		add(EgressCheckName, CheckFail, "cannot make a sandbox network: "+err.Error(),
			"allowlist sandboxes (network.mode) need internal bridge networks; check the engine's network backend, or set network.mode = \"open\"")
		return
	}
	info, ierr := conn.InspectNetwork(ctx, id)
	cctx, cancel := engine.CleanupContext(ctx)
	defer cancel()
	rerr := conn.RemoveNetwork(cctx, id)
	switch {
	case ierr != nil:
		add(EgressCheckName, CheckFail, "cannot inspect the internal network: "+ierr.Error(), "check the engine's logs")
	case len(info.Gateways) == 0 || info.Internal != internal:
		add(EgressCheckName, CheckFail, fmt.Sprintf("the engine made %s without a gateway or with internal=%v", name, info.Internal),
			"podbot needs the gateway to keep an allowlist sandbox away from the engine host; use Podman (netavark) or dockerd's bridge driver")
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
}
