package tools

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPServerName is the implementation name the MCP server announces.
const MCPServerName = "podbot-sidecar"

// NewMCPServer returns an MCP server offering every tool of Specs over ws.
// A refused call comes back as a tool error (IsError, with the message as
// text); a result comes back as structured content and as JSON text.
func NewMCPServer(ws *Workspace, version string) *mcp.Server {
	return newMCPServer(ws, version, Prompt())
}

// NewUnsafeMCPServer is NewMCPServer for the unsafe local backend: the
// same tools, announced with UnsafePrompt.
func NewUnsafeMCPServer(ws *Workspace, version string) *mcp.Server {
	return newMCPServer(ws, version, UnsafePrompt())
}

func newMCPServer(ws *Workspace, version, instructions string) *mcp.Server {
	return NewCallerMCPServer(MCPServerName, Specs(), version, instructions, func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		out, err := ws.Call(ctx, name, args)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	})
}

// Caller runs the tool name with JSON arguments and returns its JSON result.
type Caller func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)

// NewCallerMCPServer returns an MCP server named impl offering specs, each call
// answered by call: the one place tool specs become MCP tools, shared by the
// sidecar (over a Workspace) and host-side tool sessions (over a session).
// An error from call comes back as a tool error (IsError, with the message
// as text); a result comes back as JSON text and as structured content.
func NewCallerMCPServer(impl string, specs []Spec, version, instructions string, call Caller) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: impl, Version: version},
		&mcp.ServerOptions{Instructions: instructions})
	for _, spec := range specs {
		destructive := spec.Destructive
		name := spec.Name
		s.AddTool(&mcp.Tool{
			Name:        spec.Name,
			Description: spec.Description,
			InputSchema: spec.InputSchema,
			Annotations: &mcp.ToolAnnotations{
				ReadOnlyHint:    spec.ReadOnly,
				DestructiveHint: &destructive,
				OpenWorldHint:   new(bool),
			},
		}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			out, err := call(ctx, name, req.Params.Arguments)
			if err != nil {
				res := &mcp.CallToolResult{}
				res.SetError(err)
				return res, nil
			}
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: string(out)}},
				StructuredContent: out,
			}, nil
		})
	}
	return s
}
