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
	s := mcp.NewServer(&mcp.Implementation{Name: MCPServerName, Version: version},
		&mcp.ServerOptions{Instructions: instructions})
	for _, spec := range Specs() {
		destructive := spec.Destructive
		s.AddTool(&mcp.Tool{
			Name:        spec.Name,
			Description: spec.Description,
			InputSchema: spec.InputSchema,
			Annotations: &mcp.ToolAnnotations{
				ReadOnlyHint:    spec.ReadOnly,
				DestructiveHint: &destructive,
				OpenWorldHint:   new(bool),
			},
		}, mcpHandler(ws, spec.Name))
	}
	return s
}

func mcpHandler(ws *Workspace, name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		out, err := ws.Call(ctx, name, req.Params.Arguments)
		if err != nil {
			res := &mcp.CallToolResult{}
			res.SetError(err)
			return res, nil
		}
		data, err := json.Marshal(out)
		if err != nil {
			res := &mcp.CallToolResult{}
			res.SetError(err)
			return res, nil
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: string(data)}},
			StructuredContent: json.RawMessage(data),
		}, nil
	}
}
