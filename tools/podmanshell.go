package tools

import "fmt"

// PodmanShellParams are the parameters of podman_shell, the single-tool
// form of the container shell for adapters that want one generic shell.
//
// Unlike shell_execute, Command is a shell string. Only the container
// backend implements podman_shell: it runs the string as
// ["/bin/sh", "-c", command] inside the sandbox (see ShellParams). The
// unsafe local backend does not offer it, so no shell string ever reaches
// a host shell.
type PodmanShellParams struct {
	// Action is "start", "exec" or "stop".
	Action string `json:"action"`
	// Command is the shell command for "exec"; refused for the other actions.
	Command string `json:"command,omitempty"`
	// TimeoutSeconds bounds an "exec" (default 30, clamped to [1, 120]).
	TimeoutSeconds *float64 `json:"timeout_seconds,omitempty"`
}

// PodmanShellResult is the result of podman_shell. Stdout, Stderr and
// ExitCode are set for "exec" only.
type PodmanShellResult struct {
	// Action echoes the action.
	Action string `json:"action"`
	// ContainerName names the sandbox container.
	ContainerName string `json:"container_name"`
	// Stdout and Stderr are bounded like shell_execute's.
	Stdout *string `json:"stdout"`
	Stderr *string `json:"stderr"`
	// ExitCode is the command's exit status.
	ExitCode *int `json:"exit_code"`
}

// podman_shell actions.
const (
	PodmanShellStart = "start"
	PodmanShellExec  = "exec"
	PodmanShellStop  = "stop"
)

// PodmanShellTool is the name of the podman_shell tool.
const PodmanShellTool = "podman_shell"

// Validate checks p against the podman_shell contract.
func (p PodmanShellParams) Validate() error {
	switch p.Action {
	case PodmanShellStart, PodmanShellStop:
		if p.Command != "" {
			return invalid(PodmanShellTool, "command", fmt.Sprintf("is only used with action \"exec\"; remove it for %q", p.Action))
		}
		return nil
	case PodmanShellExec:
	default:
		return invalid(PodmanShellTool, "action", fmt.Sprintf("is %q; use \"start\", \"exec\" or \"stop\"", p.Action))
	}
	if p.Command == "" {
		return invalid(PodmanShellTool, "command", "is required for action \"exec\"; give a shell command such as \"ls -la\"")
	}
	if len(p.Command) > MaxPodmanCommandBytes {
		return invalid(PodmanShellTool, "command", fmt.Sprintf("is %d bytes; keep it at most %d", len(p.Command), MaxPodmanCommandBytes))
	}
	_, err := p.ShellParams().check()
	return err
}

// ShellParams turns an "exec" into the shell_execute call the container
// backend sends to the sidecar: ["/bin/sh", "-c", command] in /workspace.
// It is meant for a sandbox shell only; never run it on the host.
func (p PodmanShellParams) ShellParams() ShellParams {
	return ShellParams{Command: []string{"/bin/sh", "-c", p.Command}, TimeoutSeconds: p.TimeoutSeconds}
}
