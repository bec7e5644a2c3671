package main

import (
	"context"
	"errors"

	"github.com/podbot/podbot/errdefs"
)

// Exit codes. This is the one place errors become process exit statuses;
// the README's "Exit codes" table mirrors it.
const (
	exitOK          = 0
	exitFailure     = 1 // an error with no more specific class, or a failed check
	exitUsage       = 2 // bad flags or arguments
	exitConfig      = 3 // errdefs.ErrConfig
	exitEngine      = 4 // errdefs.ErrContainer: engine unreachable, container problem
	exitGitHub      = 5 // errdefs.ErrGitHub
	exitFilesystem  = 6 // errdefs.ErrFilesystem
	exitRepo        = 7 // errdefs.ErrRepo: a local repository or taking a sandbox's work back
	exitInterrupted = 130
)

// usageError marks a command-line usage mistake (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// silentError carries an exit status for a failure the command has already
// reported (for example a doctor run with a failed check).
type silentError struct{ code int }

func (e *silentError) Error() string { return "" }

// exitCode maps an error returned by a command to the process exit status.
func exitCode(err error) int {
	var exit *errdefs.ExitError
	var usage *usageError
	var silent *silentError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &exit):
		return exit.Code
	case errors.As(err, &silent):
		return silent.code
	case errors.As(err, &usage):
		return exitUsage
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.Is(err, errdefs.ErrConfig):
		return exitConfig
	case errors.Is(err, errdefs.ErrContainer):
		return exitEngine
	case errors.Is(err, errdefs.ErrGitHub):
		return exitGitHub
	case errors.Is(err, errdefs.ErrFilesystem):
		return exitFilesystem
	case errors.Is(err, errdefs.ErrRepo):
		return exitRepo
	default:
		return exitFailure
	}
}
