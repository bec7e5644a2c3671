package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/errdefs"
)

// companionName is the file name of the companion binary: podbot built from
// the same sources with -tags kubernetes. It carries the kubernetes backend
// and client-go, which podbot itself does not link, so that no other command
// pays client-go's size and start-up time.
const companionName = "podbot-kube"

// kubeServed are the commands the kubernetes backend serves through
// client-go. With sandbox.backend = "kubernetes" the lean podbot hands them
// to the companion; every other command runs here (engineOnly ones are
// refused by checkBackend).
var kubeServed = map[string]bool{"create": true, "run": true, "host": true, "exec": true, "ps": true, "logs": true, "rm": true, "tools": true, "pool": true, "network": true, "prune": true,
	"diff": true, "log": true, "fetch": true, "apply": true, "token-daemon": true,
	// doctor: the companion reads the cluster (the nodes' process limit);
	// without a usable companion the lean doctor runs and reports why.
	"doctor": true}

// handOver is what passing a command to the companion needs. newFactory
// fills it from the process; tests replace the functions.
type handOver struct {
	// argv0 and args are the program name and the arguments podbot was
	// started with, passed on unchanged.
	argv0 string
	args  []string
	// executable returns the path of the running binary (os.Executable).
	executable func() (string, error)
	// exec replaces the process with path (syscall.Exec); it returns
	// only on failure.
	exec func(path string, argv, env []string) error
}

// topCommand is cmd's ancestor just below the root (cmd itself when it is
// a top-level command).
func topCommand(cmd *cobra.Command) *cobra.Command {
	for cmd.HasParent() && cmd.Parent().HasParent() {
		cmd = cmd.Parent()
	}
	return cmd
}

// maybeHandOver passes cmd to the companion podbot-kube when this build
// lacks the kubernetes backend, the backend is selected (--backend, the
// environment or a config file) and cmd is one it serves. The companion
// replaces this process with the same arguments and environment, so its
// signals, standard streams, terminal and exit status are the command's
// own; on success maybeHandOver does not return. The companion itself never
// hands over. A configuration that does not load is left to the command,
// which reports it.
func (f *factory) maybeHandOver(cmd *cobra.Command) error {
	if kubernetesBuild || !kubeServed[topCommand(cmd).Name()] || usesNoSandbox(cmd) {
		return nil
	}
	loaded, err := f.baseConfig()
	if err != nil || loaded.Config.Sandbox.Backend != config.BackendKubernetes {
		return nil
	}
	path, err := findCompanion(f.handOver.executable)
	if err != nil {
		if topCommand(cmd).Name() == "doctor" {
			return nil
		}
		return err
	}
	f.logger.Debug("kubernetes backend: handing over", "companion", path)
	argv := append([]string{f.handOver.argv0}, f.handOver.args...)
	err = f.handOver.exec(path, argv, f.environ)
	return &errdefs.FilesystemError{Op: "run", Path: path, Msg: "the kubernetes backend's companion binary could not be started", Err: err}
}

// usesNoSandbox reports whether cmd needs no sandbox backend at all: a
// tools command on the unsafe local backend (--backend local).
func usesNoSandbox(cmd *cobra.Command) bool {
	if topCommand(cmd).Name() != "tools" {
		return false
	}
	fl := cmd.Flags().Lookup("backend")
	if fl == nil {
		return true // podbot tools alone prints its help
	}
	backend, err := podbot.ParseToolBackend(fl.Value.String())
	return err == nil && backend == podbot.ToolBackendUnsafeLocal
}

// findCompanion returns the resolved path of podbot-kube in the directory
// of the running binary (after symlinks), checked by checkCompanion. There
// is no $PATH search: the companion is the one installed with this podbot.
func findCompanion(executable func() (string, error)) (string, error) {
	self, err := executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return "", &errdefs.FilesystemError{Op: "find", Path: companionName, Msg: "podbot cannot locate its own executable, next to which " + companionName + " is installed", Err: err}
	}
	path := filepath.Join(filepath.Dir(self), companionName)
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", &errdefs.FilesystemError{Op: "find", Path: path, Reason: errdefs.ErrNotFound,
			Msg: "the kubernetes backend runs in the companion binary " + companionName + ", which is not installed next to podbot; build both with `make build` (bin/podbot and bin/" + companionName + ") and install them in the same directory"}
	}
	if err != nil {
		return "", &errdefs.FilesystemError{Op: "resolve", Path: path, Err: err}
	}
	if sameFile(real, self) {
		return "", &errdefs.FilesystemError{Op: "check", Path: path, Reason: errdefs.ErrRefused,
			Msg: "this is podbot built without the kubernetes backend, installed as " + companionName + "; build the companion with `make build` (go build -tags kubernetes)"}
	}
	if err := checkCompanion(real); err != nil {
		return "", err
	}
	return real, nil
}

// sameFile reports whether a and b name the same file (a hard link too).
func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return a == b || (errA == nil && errB == nil && os.SameFile(fa, fb))
}
