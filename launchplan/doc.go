// Package launchplan turns a launch request into a fully resolved, hardened
// launch plan: image, container name, user, agent command, environment,
// mounts, labels, resource limits, security options and stream policy.
//
// The package is pure: it performs no I/O, reads no environment and touches no
// filesystem. Everything it needs arrives in a Request, already resolved by the
// caller (for example host paths are canonicalised by package workspace and
// engine socket paths are resolved by the engine connection). It does not know
// podbot's configuration types; the root package maps configuration into a
// Request.
//
// Hardening is a set of small composable Options, one per control, in the
// manner of OCI spec options. Normalize picks the options a request implies;
// callers may apply more with Plan.Apply, which always re-runs the engine
// socket guard. Render produces the Engine API create-call bodies.
//
// Defaults (all overridable through Request.Sandbox):
//
//   - not privileged; every capability dropped except DefaultKeptCapabilities
//     for agents (none for tool sessions); no-new-privileges; the engine's
//     default seccomp profile (never seccomp=unconfined);
//   - agents: pids 2048, memory 4 GiB, 2 CPUs, the engine's default network;
//   - tool sessions: user 65534:65534, network none, pids 512, memory 1 GiB,
//     1 CPU, read-only root with a tmpfs /tmp, /workspace the only bind mount;
//   - minimal profile: SELinux label=disable unless keep_default, /dev/fuse and
//     SYS_ADMIN only when asked; privileged profile: privileged only;
//   - labels podbot.managed, podbot.version, podbot.intent, podbot.agent.kind,
//     podbot.session; name podbot-<kind>-<short session id>.
package launchplan
