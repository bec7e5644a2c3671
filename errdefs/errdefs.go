package errdefs

import (
	"errors"
	"fmt"
	"strings"
)

// Class sentinels. Every typed error in this package matches exactly one of
// them with errors.Is.
var (
	// ErrConfig marks a configuration problem: a bad key, value, file or combination.
	ErrConfig = errors.New("configuration error")
	// ErrContainer marks a problem talking to the container engine or with a container.
	ErrContainer = errors.New("container engine error")
	// ErrGitHub marks a problem with the GitHub App, its key or its tokens.
	ErrGitHub = errors.New("github error")
	// ErrFilesystem marks a host filesystem problem.
	ErrFilesystem = errors.New("filesystem error")
)

// Reason sentinels refine a class. A typed error matches its reason with
// errors.Is in addition to its class.
var (
	// ErrMissingRequired: a required configuration value is absent.
	ErrMissingRequired = errors.New("missing required value")
	// ErrInvalidValue: a configuration value has the wrong type or is out of range.
	ErrInvalidValue = errors.New("invalid value")
	// ErrUnknownKey: a configuration file names a key podbot does not know.
	ErrUnknownKey = errors.New("unknown key")
	// ErrConflict: two settings (or a setting and a command) cannot be combined.
	ErrConflict = errors.New("conflicting settings")
	// ErrParse: a configuration file is not valid TOML.
	ErrParse = errors.New("parse error")

	// ErrSocketNotFound: a unix socket endpoint does not exist.
	ErrSocketNotFound = errors.New("socket not found")
	// ErrPermissionDenied: the caller may not use a socket or path.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrConnectionFailed: the engine endpoint could not be reached.
	ErrConnectionFailed = errors.New("connection failed")
	// ErrTimeout: the engine did not answer in time.
	ErrTimeout = errors.New("timed out")
	// ErrNotFound: a container, exec or image does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a container or image name is taken.
	ErrAlreadyExists = errors.New("already exists")
	// ErrUnsupported: the engine or host cannot do what was asked.
	ErrUnsupported = errors.New("unsupported")
	// ErrExecFailed: an exec could not be run or reported no exit code.
	ErrExecFailed = errors.New("exec failed")
	// ErrRefused: podbot refused the request by policy (for example a plan
	// that would expose the engine socket, or a container podbot did not create).
	ErrRefused = errors.New("refused by policy")

	// ErrAuth: credentials were rejected.
	ErrAuth = errors.New("authentication failed")
	// ErrRateLimited: the remote service asked podbot to slow down.
	ErrRateLimited = errors.New("rate limited")
	// ErrUnavailable: the remote service failed (5xx) or could not be reached.
	ErrUnavailable = errors.New("service unavailable")
	// ErrInvalidKey: a private key could not be loaded or is of the wrong kind.
	ErrInvalidKey = errors.New("invalid private key")
)

// ConfigError is a configuration problem tied to one key.
type ConfigError struct {
	// Key is the dotted configuration key (e.g. "sandbox.privileged").
	Key string
	// Source names where the value came from: a file path (with line when
	// known), an environment variable, a flag, or "default".
	Source string
	// Reason is one of the reason sentinels (ErrInvalidValue, ErrUnknownKey, ...).
	Reason error
	// Msg says what was expected and how to fix it.
	Msg string
	// Err is the underlying cause, if any.
	Err error
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("config")
	if e.Key != "" {
		b.WriteString(" ")
		b.WriteString(e.Key)
	}
	if e.Source != "" {
		fmt.Fprintf(&b, " (from %s)", e.Source)
	}
	b.WriteString(": ")
	b.WriteString(message(e.Msg, e.Reason, e.Err))
	return b.String()
}

// Is reports whether target is ErrConfig or this error's reason.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig || isReason(e.Reason, target) }

// Unwrap returns the underlying cause.
func (e *ConfigError) Unwrap() error { return e.Err }

// ContainerError is a problem with the engine connection or a container.
type ContainerError struct {
	// Op is the operation that failed ("connect", "ping", "create", "exec", ...).
	Op string
	// Endpoint is the engine endpoint that was used, when relevant.
	Endpoint string
	// Container is the container name or id, when relevant.
	Container string
	// Reason is one of the reason sentinels (ErrSocketNotFound, ErrNotFound, ...).
	Reason error
	// Msg is a human description; Hint says how to fix it.
	Msg, Hint string
	// Err is the underlying cause, if any.
	Err error
}

func (e *ContainerError) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Container != "" {
		fmt.Fprintf(&b, " %s", e.Container)
	}
	if e.Endpoint != "" {
		fmt.Fprintf(&b, " (engine %s)", e.Endpoint)
	}
	b.WriteString(": ")
	b.WriteString(message(e.Msg, e.Reason, e.Err))
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// Is reports whether target is ErrContainer or this error's reason.
func (e *ContainerError) Is(target error) bool {
	return target == ErrContainer || isReason(e.Reason, target)
}

// Unwrap returns the underlying cause.
func (e *ContainerError) Unwrap() error { return e.Err }

// GitHubError is a problem with the GitHub App, its key or its tokens.
type GitHubError struct {
	// Op is the operation ("load key", "validate app", "installation token", ...).
	Op string
	// Path is the private key path, when relevant.
	Path string
	// Status is the HTTP status GitHub answered, when there was one.
	Status int
	// Reason is one of the reason sentinels (ErrAuth, ErrInvalidKey, ...).
	Reason error
	// Msg says what went wrong and how to fix it.
	Msg string
	// Err is the underlying cause, if any.
	Err error
}

func (e *GitHubError) Error() string {
	var b strings.Builder
	b.WriteString("github ")
	b.WriteString(e.Op)
	if e.Path != "" {
		fmt.Fprintf(&b, " %s", e.Path)
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	b.WriteString(": ")
	b.WriteString(message(e.Msg, e.Reason, e.Err))
	return b.String()
}

// Is reports whether target is ErrGitHub or this error's reason.
func (e *GitHubError) Is(target error) bool { return target == ErrGitHub || isReason(e.Reason, target) }

// Unwrap returns the underlying cause.
func (e *GitHubError) Unwrap() error { return e.Err }

// FilesystemError is a host filesystem problem tied to a path, in the manner
// of io/fs.PathError.
type FilesystemError struct {
	// Op is the operation ("read", "write", "resolve", ...).
	Op string
	// Path is the host path involved.
	Path string
	// Reason is one of the reason sentinels, if any (ErrRefused, ErrPermissionDenied, ...).
	Reason error
	// Msg adds detail or a fix.
	Msg string
	// Err is the underlying cause, if any.
	Err error
}

func (e *FilesystemError) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Op, e.Path, message(e.Msg, e.Reason, e.Err))
}

// Is reports whether target is ErrFilesystem or this error's reason.
func (e *FilesystemError) Is(target error) bool {
	return target == ErrFilesystem || isReason(e.Reason, target)
}

// Unwrap returns the underlying cause.
func (e *FilesystemError) Unwrap() error { return e.Err }

// ExitError carries a process exit status that the CLI should pass on as its
// own (for example the agent's exit status in podbot run, or an exec's).
// It is not a failure of podbot itself.
type ExitError struct {
	// Code is the exit status, already clamped to 0..255.
	Code int
}

func (e *ExitError) Error() string { return fmt.Sprintf("process exited with status %d", e.Code) }

// ClampExitCode maps an engine-reported exit code to a process exit status:
// negative values become 1, values above 255 become 255.
func ClampExitCode(code int64) int {
	switch {
	case code < 0:
		return 1
	case code > 255:
		return 255
	default:
		return int(code)
	}
}

func isReason(reason, target error) bool {
	return reason != nil && target == reason
}

func message(msg string, reason, err error) string {
	parts := make([]string, 0, 2)
	if msg != "" {
		parts = append(parts, msg)
	} else if reason != nil {
		parts = append(parts, reason.Error())
	}
	if err != nil {
		parts = append(parts, err.Error())
	}
	if len(parts) == 0 {
		return "failed"
	}
	return strings.Join(parts, ": ")
}

// ErrRepo is the class of errors about a local git repository a sandbox is
// copied from, or about taking a sandbox's work back into it.
var ErrRepo = errors.New("local repository error")

// RepoError is a problem with a local repository (podbot's local_clone
// workspace and the diff, log, fetch and apply commands).
type RepoError struct {
	// Op is the operation ("open", "copy in", "fetch", "apply", ...).
	Op string
	// Repo is the host repository's path, when known.
	Repo string
	// Reason is one of the reason sentinels (ErrInvalidValue, ErrRefused,
	// ErrConflict, ErrExecFailed, ...).
	Reason error
	// Msg says what is wrong; Hint says how to fix it or how to go back.
	Msg, Hint string
	// Err is the underlying cause, if any.
	Err error
}

func (e *RepoError) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Repo != "" {
		fmt.Fprintf(&b, " %s", e.Repo)
	}
	b.WriteString(": ")
	b.WriteString(message(e.Msg, e.Reason, e.Err))
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// Is reports whether target is ErrRepo or this error's reason.
func (e *RepoError) Is(target error) bool { return target == ErrRepo || isReason(e.Reason, target) }

// Unwrap returns the underlying cause.
func (e *RepoError) Unwrap() error { return e.Err }
