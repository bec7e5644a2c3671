package sandbox

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/podbot/podbot/tools"
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
	return tools.NewCallerMCPServer(MCPServerName, s.Specs(), version, s.Prompt(), s.Call)
}
