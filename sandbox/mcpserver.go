package sandbox

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPServerName is the implementation name NewMCPServer announces.
const MCPServerName = "podbot-tools"

// NewMCPServer returns an MCP server that offers the session's tools and
// forwards every call to it, so any MCP client gets the session's sandbox.
// A refused call or a backend failure comes back as a tool error (IsError,
// with the message as text); a result comes back as JSON text and as
// structured content. The server announces the session's Prompt as its
// instructions.
func NewMCPServer(s Session, version string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: MCPServerName, Version: version},
		&mcp.ServerOptions{Instructions: s.Prompt()})
	for _, spec := range s.Specs() {
		destructive := spec.Destructive
		name := spec.Name
		srv.AddTool(&mcp.Tool{
			Name:        spec.Name,
			Description: spec.Description,
			InputSchema: spec.InputSchema,
			Annotations: &mcp.ToolAnnotations{
				ReadOnlyHint:    spec.ReadOnly,
				DestructiveHint: &destructive,
				OpenWorldHint:   new(bool),
			},
		}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			out, err := s.Call(ctx, name, req.Params.Arguments)
			if err != nil {
				res := &mcp.CallToolResult{}
				res.SetError(err)
				return res, nil
			}
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: string(out)}},
				StructuredContent: json.RawMessage(out),
			}, nil
		})
	}
	return srv
}
