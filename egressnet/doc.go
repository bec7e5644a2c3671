// Package egressnet is the engine-side plumbing of an allowlist sandbox's
// egress: the names and labels of its internal network and proxy
// container, the host directories that hold the proxy's policy file and
// decision log, and the container configurations of the proxy and of the
// netlock helper that closes the sandbox's network namespace down to its
// internal subnet. It does file I/O but no engine calls: the root package
// runs those, so the launch sequence stays in one place.
//
// It is a package of its own (not part of egress, which is the policy core
// the proxy inside the container imports, nor of engine, which knows no
// sandboxes) because its callers are the launch, lifecycle, prune, doctor
// and `podbot network` code, all host-side.
package egressnet
