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
	id, err := conn.CreateNetwork(ctx, name, engine.NetworkOptions{Internal: true,
		Labels: map[string]string{launchplan.LabelManaged: "true", egressnet.LabelRole: "doctor"}})
	if err != nil {
		add(EgressCheckName, CheckFail, "cannot make an internal network: "+err.Error(),
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
	case len(info.Gateways) == 0 || !info.Internal:
		add(EgressCheckName, CheckFail, fmt.Sprintf("the engine made %s without a gateway or not internal", name),
			"podbot needs the gateway to keep an allowlist sandbox away from the engine host; use Podman (netavark) or dockerd's bridge driver")
	case rerr != nil:
		add(EgressCheckName, CheckWarn, "made an internal network but could not remove it: "+rerr.Error(), "remove it with `podbot prune`")
	case sidecar == "":
		add(EgressCheckName, CheckWarn, "internal networks work, but podbot-sidecar (the egress proxy) is missing: allowlist sandboxes cannot start",
			"install podbot-sidecar next to podbot (make build), or set PODBOT_SIDECAR_PATH")
	default:
		add(EgressCheckName, CheckOK, fmt.Sprintf("internal networks work (gateway %s); the proxy runs %s from the sandbox image", info.Gateways[0], sidecar), "")
	}
}
