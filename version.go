// Package podbot runs AI coding agents inside hardened Podman or Docker
// containers. It is the public orchestration API behind the podbot CLI:
// engine connection, sandbox image builds, health checks, and (in the
// packages it composes) launch plans, credentials, tokens and tool sessions.
//
// Library code in this package never prints and never exits: every call
// returns data and typed errors (see package errdefs).
package podbot

// Version is podbot's version. It tags the sandbox image
// (localhost/podbot-sandbox:<Version>) and labels every container podbot creates.
const Version = "0.1.0"
