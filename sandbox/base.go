package sandbox

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/tools"
)

var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// common holds what both backends share: identity, events and defaults.
type common struct {
	id      string
	backend string
	opts    Options
	logger  *slog.Logger
}

func newCommon(backend string, opts Options) (common, error) {
	id := opts.ID
	if id == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return common{}, &errdefs.FilesystemError{Op: "generate session id", Path: "crypto/rand", Err: err}
		}
		id = hex.EncodeToString(b[:])
	}
	if !sessionIDPattern.MatchString(id) {
		return common{}, &errdefs.ConfigError{Key: "tools.session", Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("session id %q must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", id)}
	}
	if opts.ShellTimeout != 0 && (opts.ShellTimeout < time.Second || opts.ShellTimeout > tools.MaxShellTimeout) {
		return common{}, &errdefs.ConfigError{Key: "tools.shell_timeout", Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("default shell timeout %s must be between 1s and %s", opts.ShellTimeout, tools.MaxShellTimeout)}
	}
	return common{id: id, backend: backend, opts: opts, logger: loggerOrDiscard(opts.Logger)}, nil
}

// loggerOrDiscard is l, or a logger that discards when l is nil.
func loggerOrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

func (c *common) now() time.Time {
	if c.opts.Clock != nil {
		return c.opts.Clock()
	}
	return time.Now()
}

// emit delivers an event to the handler, if any.
func (c *common) emit(e Event) {
	if c.opts.OnEvent == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = c.now()
	}
	e.Session, e.Backend = c.id, c.backend
	c.opts.OnEvent(e)
}

// lifecycle emits a lifecycle event.
func (c *common) lifecycle(kind, container string, d time.Duration) {
	c.emit(Event{Kind: kind, Container: container, Duration: d, Success: true})
}

// recordCall emits the tool_call event of one finished call.
func (c *common) recordCall(name string, args, result json.RawMessage, container string, start time.Time, err error) {
	if c.opts.OnEvent == nil {
		return
	}
	e := Event{Kind: EventToolCall, Tool: name, Container: container, Params: redactParams(args, c.opts.Redactor),
		Duration: c.now().Sub(start)}
	if err != nil {
		e.Error = c.opts.Redactor.Redact(err.Error())
	} else {
		e.ExitCode = resultExitCode(result)
		e.Success = e.ExitCode == nil || *e.ExitCode == 0
	}
	c.emit(e)
}

// withDefaults applies the session's default shell timeout to a
// shell_execute call that gives none. Arguments that are not a JSON object
// pass through untouched so the tool reports them.
func (c *common) withDefaults(name string, args json.RawMessage) json.RawMessage {
	if name != tools.ShellExecuteTool || c.opts.ShellTimeout == 0 || c.opts.ShellTimeout == tools.DefaultShellTimeout {
		return args // the tool's own default applies
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil || m == nil {
		return args
	}
	if _, ok := m["timeout_seconds"]; ok {
		return args
	}
	m["timeout_seconds"] = json.RawMessage(fmt.Sprintf("%g", c.opts.ShellTimeout.Seconds()))
	out, err := json.Marshal(m)
	if err != nil {
		return args
	}
	return out
}

// normalizeArgs turns empty arguments into an empty object.
func normalizeArgs(args json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		return json.RawMessage("{}")
	}
	return args
}

// errClosed is returned by calls on a closed session.
func errClosed(id string) error {
	return &errdefs.ContainerError{Op: "tool call", Container: id, Reason: errdefs.ErrNotFound,
		Msg: "the tool session is closed", Hint: "start a new session"}
}

// isToolError reports whether err is a refusal the caller should fix.
func isToolError(err error) bool { return errors.Is(err, tools.ErrInvalidInput) }
