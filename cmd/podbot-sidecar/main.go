// Command podbot-sidecar is the small static binary podbot copies into every
// sandbox. "podbot-sidecar serve" speaks MCP on stdio and offers the tools
// over /workspace; "podbot-sidecar init" runs as the container's PID 1,
// keeping it alive and reaping zombies; "podbot-sidecar egress" serves a
// sandbox's egress proxy; "podbot-sidecar version" prints the version. It
// imports nothing host-side: no engine, no configuration.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// version is set at link time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
