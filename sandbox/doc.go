// Package sandbox runs host-side tool sessions: the podbot tool surface
// (package tools) on a backend a caller can swap without changing a call.
//
// Two backends implement Session:
//
//   - The container backend (NewContainer) creates a hardened container
//     lazily on the first call, with /workspace its only writable mount
//     (a host directory under the workspace root, so edits survive a
//     container recreation). Its podbot-sidecar starts with the container
//     and listens on a unix socket in the session's link directory
//     (package sidecarsock), which the host dials without following links
//     and without an exec; where that is not possible the host starts the
//     sidecar over an attached exec stream instead. Either way it speaks
//     MCP over one stream: every tool call after
//     that is one JSON-RPC round trip, and concurrent calls are
//     multiplexed on the one stream. It records when the container
//     started and was last used, removes it when idle or past a hard
//     uptime limit, and recreates it on the next call after an unexpected
//     exit. It also offers podman_shell. Release and AdoptContainer hand
//     a running container from one session to another, possibly in
//     another process, without a new container or exec.
//   - The same container backend on a RemoteRuntime (NewRemoteContainer):
//     a sandbox the host has no path into, such as a Pod on a cluster.
//     The runtime puts the sidecar in the sandbox and the workspace lives
//     there; calls, limits, events and the MCP stream are as above, over
//     an exec stream.
//   - The unsafe local backend (NewUnsafeLocal) runs the same tools on a
//     temporary host directory with no isolation at all. Use it only where
//     the caller already runs inside a sandbox of its own.
//
// Host mounts hydrate a new workspace by copying (never bind-mounting)
// files from allowed host roots, within a byte budget. Every tool call and
// lifecycle change is reported as an Event, with parameters redacted.
package sandbox
