// Package tools defines podbot's tool surface and implements it over a
// workspace directory.
//
// The surface is the same on every backend: shell_execute, ls, read_file,
// write_file, edit_file, glob, grep, rm and evaluate_python, plus the
// podman_shell contract for adapters that want a single generic shell. Each
// tool has a parameter struct, a result struct, named limits, validation
// whose errors say what to fix, and a JSON schema (see Specs).
//
// A Workspace runs the tools over one directory, the logical /workspace.
// Every path a caller names is relative to it and is resolved through an
// os.Root, so "..", absolute paths and symlinks leading out are refused.
// Commands run from an argv (never a shell string) in their own process
// group, with a timeout, bounded output and a bounded change report.
//
// A validation failure is an error (a *ToolError); a command that runs and
// fails is a normal result carrying its exit code.
//
// NewMCPServer exposes a Workspace over the Model Context Protocol; the
// podbot-sidecar binary serves it on stdio inside each sandbox.
package tools
