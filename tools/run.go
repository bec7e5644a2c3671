package tools

import (
	"errors"
	"io/fs"
	"os/exec"
	"path/filepath"
	"time"
)

// runSpec describes one subprocess: argv in dir, no shell.
type runSpec struct {
	argv    []string
	dir     string
	env     []string
	stdin   string
	timeout time.Duration
	capture bool
	limit   int
	// waitThread makes the Linux runner wait for the process on a thread
	// instead of a pidfd, as it does where pidfd_open is refused.
	waitThread bool
}

// runOutput is what a finished subprocess produced.
type runOutput struct {
	exitCode int
	stdout   string
	stderr   string
	duration time.Duration
	timedOut bool
}

// startFailure reports a program that could not start the way a shell
// would: 127 when not found, 126 otherwise.
func startFailure(name string, err error, d time.Duration) runOutput {
	code := 126
	msg := "podbot: cannot run " + filepath.Base(name) + ": " + err.Error() + "\n"
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		code = 127
		msg = "podbot: command not found: " + name + "\n"
	}
	return runOutput{exitCode: code, stderr: msg, duration: d}
}
