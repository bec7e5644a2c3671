//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

func TestInitLoopReapsAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- initLoop(ctx, nil) }()

	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	proc := "/proc/" + strconv.Itoa(cmd.Process.Pid)
	reaped := false
	for range 500 { // a zombie keeps its /proc entry until reaped
		if _, err := os.Stat(proc); os.IsNotExist(err) {
			reaped = true
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !reaped {
		t.Error("the exited child was not reaped")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("initLoop returned %v after cancel", err)
	}
}
