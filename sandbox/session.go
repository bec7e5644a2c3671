package sandbox

import (
	"context"
	"encoding/json"
	"time"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/tools"
)

// Backend names, as they appear in events, Info and the CLI.
const (
	// BackendContainer runs the tools in a hardened container via podbot-sidecar.
	BackendContainer = "container"
	// BackendUnsafeLocal runs the tools on a host directory with no isolation.
	BackendUnsafeLocal = "unsafe-local"
)

// Session is a tool session. Both backends implement it, so a caller can
// swap one for the other without changing a call. Its methods are safe for
// concurrent use.
type Session interface {
	// Call runs the named tool with JSON arguments and returns its result
	// as JSON. A refused call (bad input, unknown tool) is an error
	// matching tools.ErrInvalidInput; a command that runs and fails is a
	// normal result carrying its exit code. Other errors mean the backend
	// failed (engine, container, filesystem).
	Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)
	// Specs describes the tools this session offers.
	Specs() []tools.Spec
	// Prompt is the text that tells a model what the tools are.
	Prompt() string
	// Info reports the session's state.
	Info() Info
	// Clone returns a new, independent session of the same backend and
	// settings whose workspace starts as a copy of this one.
	Clone(ctx context.Context) (Session, error)
	// Close ends the session: it removes the container (if any) and the
	// workspace directory. Calls after Close fail.
	Close(ctx context.Context) error
}

// Info is a snapshot of a session's state.
type Info struct {
	// ID identifies the session.
	ID string `json:"id"`
	// Backend is BackendContainer or BackendUnsafeLocal.
	Backend string `json:"backend"`
	// WorkspaceDir is the host directory behind /workspace.
	WorkspaceDir string `json:"workspace_dir"`
	// ContainerID and ContainerName name the current container; empty when
	// none runs (before the first call, after idle cleanup) and always for
	// the unsafe local backend.
	ContainerID   string `json:"container_id,omitempty"`
	ContainerName string `json:"container_name,omitempty"`
	// CPUSet lists the CPUs the current container is pinned to ("1",
	// "0-1"); empty when it is not pinned (see ContainerOptions.CPUSet).
	CPUSet string `json:"cpuset,omitempty"`
	// StartedAt is when the current container (or local workspace) started;
	// zero when none runs.
	StartedAt time.Time `json:"started_at,omitzero"`
	// LastUsedAt is when the last tool call ended; zero before the first.
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
	// Link is how the host reaches the current container's sidecar:
	// LinkSocket (no exec) or LinkExec; empty when none runs.
	Link string `json:"link,omitempty"`
	// Recreations counts containers recreated after an unexpected exit.
	Recreations int `json:"recreations"`
}

// ToolError is a tool call the sidecar refused, carrying the sidecar's own
// message (which names the tool, the parameter and the fix). It matches
// tools.ErrInvalidInput with errors.Is, like the *tools.ToolError the
// unsafe local backend returns for the same input.
type ToolError struct {
	// Tool is the tool that was called.
	Tool string
	// Msg is the message the tool server reported.
	Msg string
}

func (e *ToolError) Error() string { return e.Msg }

// Is reports whether target is tools.ErrInvalidInput.
func (e *ToolError) Is(target error) bool { return target == tools.ErrInvalidInput }

// Invoke calls a tool with typed parameters and decodes its result into R,
// for example Invoke[tools.ShellResult](ctx, s, tools.ShellExecuteTool,
// tools.ShellParams{Command: []string{"ls"}}).
func Invoke[R any](ctx context.Context, s Session, name string, params any) (R, error) {
	var out R
	args, err := json.Marshal(params)
	if err != nil {
		return out, &tools.ToolError{Tool: name, Reason: errdefs.ErrInvalidValue, Msg: "parameters cannot be encoded as JSON", Err: err}
	}
	raw, err := s.Call(ctx, name, args)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, &errdefs.ContainerError{Op: "decode tool result", Container: name, Reason: errdefs.ErrExecFailed,
			Msg: "the tool result does not match the expected type", Err: err}
	}
	return out, nil
}
