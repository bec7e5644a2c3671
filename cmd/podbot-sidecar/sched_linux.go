//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// setBatch puts every thread of this process under SCHED_BATCH, keeping
// each one's nice value. Threads the runtime starts later, and the
// commands the tools start, inherit the policy from the thread that
// creates them. A few passes catch a thread started during one.
func setBatch() error {
	for range 3 {
		changed, err := batchThreads()
		if err != nil || changed == 0 {
			return err
		}
	}
	return nil
}

// batchThreads moves the threads not yet under SCHED_BATCH to it and
// returns how many it moved.
func batchThreads() (int, error) {
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, fmt.Errorf("list threads: %w", err)
	}
	changed := 0
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		attr, err := unix.SchedGetAttr(tid, 0)
		if errors.Is(err, unix.ESRCH) {
			continue // the thread has exited
		}
		if err != nil {
			return changed, fmt.Errorf("read the scheduling policy of thread %d: %w", tid, err)
		}
		if attr.Policy == unix.SCHED_BATCH {
			continue
		}
		attr.Policy = unix.SCHED_BATCH
		attr.Priority = 0
		if err := unix.SchedSetAttr(tid, attr, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			return changed, fmt.Errorf("set SCHED_BATCH on thread %d: %w", tid, err)
		}
		changed++
	}
	return changed, nil
}

// undumpable clears the process's dumpable flag: its /proc files become
// root's, and no process without CAP_SYS_PTRACE (none in a sandbox) can
// ptrace it or read its memory. Commands it starts are dumpable again
// after their execve.
func undumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err)
	}
	return nil
}
