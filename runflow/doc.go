// Package runflow attaches a local terminal to an agent running in a
// sandbox: it decides whether the agent gets a pseudo-terminal, puts the
// local terminal in raw mode for the agent's lifetime (restored exactly
// once, whatever happens), forwards window size changes (SIGWINCH) to the
// exec, and passes the agent's exit status back.
//
// runflow knows nothing about configuration or launch plans: the caller
// (the root package's Run) hands it the agent's command line and an Execer,
// which *engine.Conn satisfies.
package runflow
