// Package kube runs podbot sandboxes as Pods through a Kubernetes API
// server: the kubernetes backend beside the container engine.
//
// A sandbox is one hardened Pod built from a launch plan (BuildPod) plus a
// NetworkPolicy of its own (BuildNetworkPolicy) that denies all ingress and,
// for egress mode none, all egress; mode allowlist allows the sandbox's
// egress proxy alone. Every operation goes through the API
// server with client-go: create and wait until Running (deleting what it
// created when anything fails or the caller gives up), exec through the
// pods/exec subresource (WebSocket, with SPDY as fallback), logs, delete
// and list by label. Nothing reaches the node through a host path.
//
// Launch (podbot run and host) adds what an agent needs: writable
// emptyDirs for its home and workspace, and a Secret of the sandbox's own
// (BuildSecret: the credential archive and the agent's variables), owned
// by the Pod and mounted read-only at SecretMountPath; SecretEnvCommand
// wraps an exec so the variables are read from that mount, never carried
// in the Pod spec or the exec request.
//
// A tool session's Pod (BuildToolPod, CreateToolPod) adds an emptyDir
// workspace and an emptyDir the host's podbot-sidecar binary (LoadSidecar)
// is streamed into over a pods/exec stdin, checked by size and SHA-256 in
// an init container, and mounted read-only in the sandbox container;
// ExecStream then carries `podbot-sidecar serve` over one long-lived exec.
//
// In egress mode allowlist a sandbox gets an egress proxy Pod of its own
// (BuildEgressPod: `podbot-sidecar egress`, the sidecar streamed in the same
// way, a client made WithSidecar), its policy file in a ConfigMap
// (BuildEgressConfigMap; ChangeEgressPolicy edits it live), a NetworkPolicy
// admitting the sandbox alone and letting the proxy out to public addresses
// (BuildEgressNetworkPolicy), and a sandbox NetworkPolicy allowing the
// proxy's port alone. All are owned by the sandbox Pod.
//
// Client.Prune removes podbot's leftovers in the namespace: sandbox Pods
// that ended or cannot start, half-made pool members, and NetworkPolicies,
// Secrets and egress proxy objects whose sandbox Pod is gone (left by a
// create interrupted before it set their owner reference), each only when
// its labels say podbot made it.
//
// Errors are *errdefs.ContainerError or *errdefs.ConfigError whose reason
// names the cause: ErrConnectionFailed (API server unreachable), ErrAuth
// (credentials rejected or expired), ErrPermissionDenied (RBAC forbids),
// ErrNotFound, ErrUnsupported (a plan the backend cannot honour, such as
// the privileged profile), ErrTimeout (a Pod not Running in time).
package kube
