//go:build !linux

package main

import "errors"

// setBatch reports that SCHED_BATCH is a Linux scheduling policy.
func setBatch() error { return errors.New("SCHED_BATCH exists on Linux only") }

// undumpable is a no-op where there is no PR_SET_DUMPABLE.
func undumpable() error { return nil }
