// Package pool keeps warm pools of ready sandboxes and hands their members
// out to claimers, each member to exactly one.
//
// A pool is a Spec (name, kind, size and the launch template of its
// members), kept in a Store with the status its refiller last wrote. A
// Backend owns the members: it lists them, creates one (started, its
// sidecar answering, then parked so it can be claimed), takes one
// atomically, and removes one. Claim and Refiller hold the backend-neutral
// logic: a claim tries ready members in random order until one Take
// succeeds (first those a Scanner names cheaply, when the backend has one); a refiller keeps a pool at size, replaces members that stopped,
// failed or aged past their maximum age, and backs off when creates keep
// failing. The container-engine backend lives in package podbot (paused
// containers, taken by unpausing); a Kubernetes backend can implement the
// same Backend with SandboxWarmPool and SandboxClaim objects.
package pool
