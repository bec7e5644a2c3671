// Package engine talks to a container engine (Podman or Docker) over the
// Docker Engine API.
//
// It owns everything between podbot and the engine socket: parsing and
// resolving the endpoint (unix, npipe, tcp, http, https, or a bare path),
// connecting with API version negotiation, the health check, describing the
// engine (Podman or Docker, versions, runtime, cgroups), container lifecycle
// (create with image pull, start, wait, stop, remove, list, inspect, logs,
// copy) and exec in its attached, detached and protocol modes.
//
// Every error it returns is an *errdefs.ContainerError (or, for a malformed
// endpoint, an *errdefs.ConfigError) that names the endpoint it tried and
// carries a reason sentinel, so callers branch with errors.Is and never on
// message text. The package knows nothing about agents or config files; the
// caller passes in the values it resolved.
package engine
