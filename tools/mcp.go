package tools

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPServerName is the implementation name the MCP server announces.
const MCPServerName = "podbot-sidecar"

// MCPOption tunes an MCP server built by this package.
type MCPOption func(*mcpConfig)

type mcpConfig struct {
	textOnly bool
}

// TextResults makes the server return each result once, as JSON text,
// without the structured-content copy MCP clients in general are given.
// podbot's host reads only the text, so its link to the sidecar asks for
// this: the result is then encoded, sent and decoded once instead of
// twice.
func TextResults() MCPOption {
	return func(c *mcpConfig) { c.textOnly = true }
}

// NewMCPServer returns an MCP server offering every tool of Specs over ws.
// A refused call comes back as a tool error (IsError, with the message as
// text); a result comes back as structured content and as JSON text
// (as JSON text alone with TextResults).
func NewMCPServer(ws *Workspace, version string, opts ...MCPOption) *mcp.Server {
	return newMCPServer(ws, version, Prompt(), opts)
}

// NewUnsafeMCPServer is NewMCPServer for the unsafe local backend: the
// same tools, announced with UnsafePrompt.
func NewUnsafeMCPServer(ws *Workspace, version string, opts ...MCPOption) *mcp.Server {
	return newMCPServer(ws, version, UnsafePrompt(), opts)
}

func newMCPServer(ws *Workspace, version, instructions string, opts []MCPOption) *mcp.Server {
	return NewCallerMCPServer(MCPServerName, Specs(), version, instructions, func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		out, err := ws.Call(ctx, name, args)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}, opts...)
}

// Caller runs the tool name with JSON arguments and returns its JSON result.
type Caller func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)

// NewCallerMCPServer returns an MCP server named impl offering specs, each call
// answered by call: the one place tool specs become MCP tools, shared by the
// sidecar (over a Workspace) and host-side tool sessions (over a session).
// An error from call comes back as a tool error (IsError, with the message
// as text); a result comes back as JSON text and as structured content
// (as JSON text alone with TextResults).
func NewCallerMCPServer(impl string, specs []Spec, version, instructions string, call Caller, opts ...MCPOption) *mcp.Server {
	var cfg mcpConfig
	for _, o := range opts {
		o(&cfg)
	}
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
			res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}
			if !cfg.textOnly {
				res.StructuredContent = out
			}
			return res, nil
		})
	}
	return s
}
