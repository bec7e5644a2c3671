package tools

import (
	"errors"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// ErrInvalidInput marks every ToolError: the call was refused before it ran
// (or could not be completed) and the caller should change its input.
var ErrInvalidInput = errors.New("invalid tool input")

// ToolError is a tool call podbot refused or could not complete, in the
// manner of io/fs.PathError. Its message names the tool, the parameter and
// what to change. It matches ErrInvalidInput and its Reason with errors.Is.
type ToolError struct {
	// Tool is the tool name ("read_file", ...).
	Tool string
	// Param is the parameter at fault ("file_path", "command", ...), if any.
	Param string
	// Reason is an errdefs reason sentinel: ErrInvalidValue, ErrRefused,
	// ErrNotFound, ErrAlreadyExists, ErrUnsupported or ErrTimeout.
	Reason error
	// Msg says what is wrong and how to fix it.
	Msg string
	// Err is the underlying cause, if any.
	Err error
}

func (e *ToolError) Error() string {
	var b strings.Builder
	b.WriteString(e.Tool)
	if e.Param != "" {
		b.WriteString(" ")
		b.WriteString(e.Param)
	}
	b.WriteString(": ")
	switch {
	case e.Msg != "":
		b.WriteString(e.Msg)
	case e.Reason != nil:
		b.WriteString(e.Reason.Error())
	default:
		b.WriteString("failed")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Is reports whether target is ErrInvalidInput or this error's reason.
func (e *ToolError) Is(target error) bool {
	return target == ErrInvalidInput || (e.Reason != nil && target == e.Reason)
}

// Unwrap returns the underlying cause.
func (e *ToolError) Unwrap() error { return e.Err }

func invalid(tool, param, msg string) *ToolError {
	return &ToolError{Tool: tool, Param: param, Reason: errdefs.ErrInvalidValue, Msg: msg}
}

func refused(tool, param, msg string) *ToolError {
	return &ToolError{Tool: tool, Param: param, Reason: errdefs.ErrRefused, Msg: msg}
}
