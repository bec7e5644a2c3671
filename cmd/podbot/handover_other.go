//go:build !unix

package main

import (
	"errors"
	"os"

	"github.com/podbot/podbot/errdefs"
)

// defaultHandOver has no execve to use outside Unix.
func defaultHandOver() handOver {
	return handOver{argv0: "podbot", executable: os.Executable,
		exec: func(string, []string, []string) error { return errors.ErrUnsupported }}
}

// checkCompanion refuses every companion outside Unix, where podbot cannot
// replace its process; run podbot-kube directly there.
func checkCompanion(path string) error {
	return &errdefs.FilesystemError{Op: "run", Path: path, Reason: errdefs.ErrUnsupported,
		Msg: "handing over to " + companionName + " needs execve; run " + companionName + " directly"}
}
