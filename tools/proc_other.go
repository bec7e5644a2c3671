//go:build !unix

package tools

import (
	"os"
	"syscall"
)

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// newProcAttr has no process-group support off unix.
func newProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup cannot reach a process group off unix; the runner's own
// kill of the leader is all there is.
func signalGroup(int, syscall.Signal) error { return nil }

// exitStatus maps a finished process to its exit code.
func exitStatus(ps *os.ProcessState) int { return ps.ExitCode() }
