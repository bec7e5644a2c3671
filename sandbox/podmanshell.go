package sandbox

import (
	"context"
	"encoding/json"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/tools"
)

// podmanShell implements podman_shell on the container backend: start
// ensures the container runs, exec runs the command with /bin/sh -c inside
// it through the sidecar's shell_execute, stop removes the container (the
// next call starts a new one, workspace intact).
func (s *Container) podmanShell(ctx context.Context, args json.RawMessage) (json.RawMessage, string, error) {
	p, err := tools.DecodeParams[tools.PodmanShellParams](tools.PodmanShellTool, args)
	if err != nil {
		return nil, "", err
	}
	if err := p.Validate(); err != nil {
		return nil, "", err
	}
	res := tools.PodmanShellResult{Action: p.Action}
	switch p.Action {
	case tools.PodmanShellStart:
		lc, err := s.acquire(ctx)
		if err != nil {
			return nil, "", err
		}
		s.inflight.Add(-1)
		res.ContainerName = lc.name
	case tools.PodmanShellStop:
		s.life.Lock()
		if s.cur != nil {
			res.ContainerName = s.cur.name
		}
		err := s.dropLocked(ctx, true)
		s.life.Unlock()
		if err != nil {
			return nil, res.ContainerName, err
		}
		if res.ContainerName != "" {
			s.lifecycle(EventStopped, res.ContainerName, 0)
		}
	case tools.PodmanShellExec:
		shellArgs, err := json.Marshal(p.ShellParams())
		if err != nil {
			return nil, "", &tools.ToolError{Tool: tools.PodmanShellTool, Reason: errdefs.ErrInvalidValue, Msg: "cannot encode the command", Err: err}
		}
		out, name, err := s.send(ctx, tools.ShellExecuteTool, shellArgs)
		if err != nil {
			return nil, name, err
		}
		var sr tools.ShellResult
		if err := json.Unmarshal(out, &sr); err != nil {
			return nil, name, &errdefs.ContainerError{Op: "podman_shell exec", Container: name, Reason: errdefs.ErrExecFailed,
				Msg: "the sidecar's shell_execute result could not be decoded", Err: err}
		}
		res.ContainerName = name
		res.Stdout, res.Stderr, res.ExitCode = &sr.Stdout, &sr.Stderr, &sr.ExitCode
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, res.ContainerName, &errdefs.ContainerError{Op: "podman_shell", Reason: errdefs.ErrExecFailed, Msg: "cannot encode the result", Err: err}
	}
	return out, res.ContainerName, nil
}
