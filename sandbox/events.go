package sandbox

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/podbot/podbot/creds"
)

// Event kinds.
const (
	// EventToolCall reports one tool call.
	EventToolCall = "tool_call"
	// EventCreated reports a new container (or local workspace).
	EventCreated = "created"
	// EventStarted reports a container started and its sidecar answering.
	EventStarted = "started"
	// EventIdleCleanup reports a container removed after IdleTimeout unused.
	EventIdleCleanup = "idle_cleanup"
	// EventUptimeLimit reports a container removed at MaxUptime.
	EventUptimeLimit = "uptime_limit"
	// EventRecreatedAfterFailure reports a container recreated because the
	// previous one exited unexpectedly; the workspace was kept.
	EventRecreatedAfterFailure = "recreated_after_failure"
	// EventReconnected reports a new sidecar stream into a container that
	// was still running after its previous stream ended.
	EventReconnected = "reconnected"
	// EventStopped reports a container removed on request (podman_shell stop).
	EventStopped = "stopped"
	// EventClosed reports the session closed and its workspace removed.
	EventClosed = "closed"
	// EventClaimed reports a session that took a ready container from a
	// warm pool instead of creating one.
	EventClaimed = "claimed"
)

// maxEventString bounds each string in an event's parameters.
const maxEventString = 256

// Event is one tool call or lifecycle change of a session. Events are
// delivered synchronously, possibly from several goroutines at once; a
// handler must be quick and safe for concurrent use.
type Event struct {
	// Time is when the event happened.
	Time time.Time `json:"time"`
	// Kind is one of the Event* constants.
	Kind string `json:"kind"`
	// Session and Backend identify the session.
	Session string `json:"session"`
	Backend string `json:"backend"`
	// Container is the container name, when one is involved.
	Container string `json:"container,omitempty"`
	// Tool is the tool name (tool_call only).
	Tool string `json:"tool,omitempty"`
	// Params are the call's parameters with secrets redacted and long
	// strings shortened (tool_call only).
	Params json.RawMessage `json:"params,omitempty"`
	// ExitCode is the command's exit status, for tools that run one.
	ExitCode *int `json:"exit_code,omitempty"`
	// Duration is how long the call (or lifecycle step) took.
	Duration time.Duration `json:"duration_ns,omitempty"`
	// Success is true for a call that returned a result with no non-zero
	// exit code, and for every lifecycle event.
	Success bool `json:"success"`
	// Error is the error message of a failed call or step.
	Error string `json:"error,omitempty"`
}

// redactParams returns args with every string value passed through r and
// cut to maxEventString bytes. Arguments that are not JSON are replaced by
// a placeholder, never copied.
func redactParams(args json.RawMessage, r *creds.Redactor) json.RawMessage {
	if len(bytes.TrimSpace(args)) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return json.RawMessage(`"[invalid JSON]"`)
	}
	out, err := json.Marshal(redactValue(v, r))
	if err != nil {
		return json.RawMessage(`"[unencodable]"`)
	}
	return out
}

func redactValue(v any, r *creds.Redactor) any {
	switch t := v.(type) {
	case string:
		s := r.Redact(t)
		if len(s) > maxEventString {
			s = s[:maxEventString] + "...[cut]"
		}
		return s
	case []any:
		for i := range t {
			t[i] = redactValue(t[i], r)
		}
		return t
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[r.Redact(k)] = redactValue(e, r)
		}
		return out
	}
	return v
}

// resultExitCode extracts "exit_code" from a result, if it has one.
func resultExitCode(result json.RawMessage) *int {
	if len(result) == 0 {
		return nil
	}
	var r struct {
		ExitCode *int `json:"exit_code"`
	}
	if json.Unmarshal(result, &r) != nil {
		return nil
	}
	return r.ExitCode
}
