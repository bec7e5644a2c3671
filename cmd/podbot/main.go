// Command podbot runs AI coding agents inside hardened Podman or Docker
// containers. This file stays thin: all behaviour lives in the library and in
// the command tree built by newRootCmd.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, systemIO(), os.Args[1:], os.Environ())
	stop()
	os.Exit(code)
}
