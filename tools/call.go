package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// Call decodes JSON arguments for the named tool, runs it and returns its
// result struct (ShellResult, LsResult, ...). Unknown tools, unknown
// parameters and malformed JSON are ToolErrors.
func (w *Workspace) Call(ctx context.Context, name string, args json.RawMessage) (any, error) {
	switch name {
	case ShellExecuteTool:
		return callTool(ctx, name, args, w.ShellExecute)
	case LsTool:
		return callTool(ctx, name, args, w.Ls)
	case ReadFileTool:
		return callTool(ctx, name, args, w.ReadFile)
	case WriteFileTool:
		return callTool(ctx, name, args, w.WriteFile)
	case EditFileTool:
		return callTool(ctx, name, args, w.EditFile)
	case GlobTool:
		return callTool(ctx, name, args, w.Glob)
	case GrepTool:
		return callTool(ctx, name, args, w.Grep)
	case RmTool:
		return callTool(ctx, name, args, w.Rm)
	case EvaluatePythonTool:
		return callTool(ctx, name, args, w.EvaluatePython)
	}
	names := make([]string, 0, 9)
	for _, s := range Specs() {
		names = append(names, s.Name)
	}
	return nil, &ToolError{Tool: name, Reason: errdefs.ErrNotFound,
		Msg: fmt.Sprintf("no such tool; use one of %s", strings.Join(names, ", "))}
}

func callTool[P, R any](ctx context.Context, name string, args json.RawMessage, fn func(context.Context, P) (R, error)) (any, error) {
	p, err := DecodeParams[P](name, args)
	if err != nil {
		return nil, err
	}
	return fn(ctx, p)
}

// DecodeParams strictly decodes JSON arguments into a parameter struct:
// unknown fields and wrong types are ToolErrors naming the field. Empty
// arguments decode to the zero value.
func DecodeParams[P any](tool string, args json.RawMessage) (P, error) {
	var p P
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return p, nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr):
			return p, invalid(tool, typeErr.Field, fmt.Sprintf("has the wrong type (got JSON %s, want %s)", typeErr.Value, typeErr.Type))
		// encoding/json reports an unknown field only in its message.
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return p, invalid(tool, field, "is not a parameter of this tool; check the tool's input schema")
		default:
			return p, invalid(tool, "", fmt.Sprintf("arguments are not a valid JSON object (%v)", err))
		}
	}
	if dec.More() {
		return p, invalid(tool, "", "arguments hold more than one JSON value; send a single object")
	}
	return p, nil
}
