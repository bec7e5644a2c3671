// Package sidecarsock owns the unix-socket link between podbot on the host
// and the podbot-sidecar serving a sandbox's tools: the names of the files in
// a sandbox's link directory, the per-sandbox key, the handshake by which
// each end proves it holds that key, and (on Linux) the host's dial, which
// reaches the socket without following a link the sandbox may have planted.
//
// The link directory is a host directory podbot creates per sandbox,
// owned by the sandbox's user, inside a private (0700) directory of
// podbot's own, and bind-mounted into the sandbox. The sandbox can write
// in it: everything the host finds there is untrusted. The sidecar reads
// the key file once at start and removes it; podbot keeps its own copy
// outside the mounted directory.
package sidecarsock
