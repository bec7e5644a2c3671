//go:build unix

package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// initLoop keeps the container alive as its PID 1 and reaps every child
// that exits (orphans are re-parented to PID 1), until ctx ends (SIGTERM or
// SIGINT).
func initLoop(ctx context.Context) error {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGCHLD)
	defer signal.Stop(sigs)
	reapAll()
	for {
		select {
		case <-ctx.Done():
			reapAll()
			return nil
		case <-sigs:
			reapAll()
		}
	}
}

// reapAll collects every exited child without blocking.
func reapAll() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
	}
}
