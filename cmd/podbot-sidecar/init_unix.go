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
// SIGINT). With child (a sidecar command and its arguments), it first
// starts this binary once more as that command, stdin /dev/null and output
// its own. A child that exits is not restarted: podbot then reaches the
// sandbox over an exec stream again.
func initLoop(ctx context.Context, child []string) error {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGCHLD)
	defer signal.Stop(sigs)
	if len(child) > 0 {
		if err := startChild(child); err != nil {
			return err
		}
	}
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

// startChild starts this binary with args, without waiting for it: the
// reaper collects it when it exits.
func startChild(args []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer null.Close()
	p, err := os.StartProcess(self, append([]string{self}, args...), &os.ProcAttr{
		Files: []*os.File{null, os.Stdout, os.Stderr},
	})
	if err != nil {
		return err
	}
	return p.Release()
}
