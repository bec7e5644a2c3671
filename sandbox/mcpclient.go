package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/tools"
)

// Limits of the sidecar connection.
const (
	// maxFrameBytes bounds one MCP message from the sidecar; results are
	// bounded far below it by the tool contracts.
	maxFrameBytes = 8 << 20
	// connectTimeout bounds the MCP handshake with a new sidecar.
	connectTimeout = 30 * time.Second
	// stderrTail is how much of the sidecar's stderr is kept for errors.
	stderrTail = 8 << 10
	// sidecarProtocol is the MCP version the host link negotiates: the
	// newest stateful one. From 2026-07-28 on, every request repeats the
	// client's identity and capabilities in _meta, which the server decodes
	// again per call; on one long-lived stream to podbot's own sidecar the
	// handshake already said all of it once.
	sidecarProtocol = "2025-11-25"
)

// connectSidecar performs the MCP handshake over st. The session lives
// until st ends or is closed; ctx bounds the handshake only.
func connectSidecar(ctx context.Context, st *stream, version, container string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "podbot", Version: version}, nil)
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), connectTimeout)
	defer cancel()
	// The handshake's context must not end the connection: the SDK ties
	// nothing but the initialize call to it, and the stream outlives it.
	stop := context.AfterFunc(ctx, func() { st.Close() })
	defer stop()
	cs, err := client.Connect(hctx, &tools.LineTransport{Reader: st.stdout, Writer: st.stdin, MaxFrameBytes: maxFrameBytes, DirectRead: true},
		&mcp.ClientSessionOptions{ProtocolVersion: sidecarProtocol})
	if err != nil {
		st.Close()
		msg := "podbot-sidecar did not answer the MCP handshake"
		if tail := strings.TrimSpace(st.stderr.String()); tail != "" {
			msg += "; it said: " + tail
		}
		return nil, &errdefs.ContainerError{Op: "start sidecar", Container: container, Reason: errdefs.ErrExecFailed, Msg: msg,
			Hint: "check that the image can run the mounted static podbot-sidecar and that /workspace is mounted", Err: err}
	}
	return cs, nil
}

// callSidecar sends one tool call over the session and returns the result
// JSON. A tool refusal becomes a *ToolError; a protocol-level error that
// is not a broken connection becomes one too.
func callSidecar(ctx context.Context, cs *mcp.ClientSession, name string, args json.RawMessage) (json.RawMessage, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) {
			return nil, &ToolError{Tool: name, Msg: name + ": " + rpcErr.Message}
		}
		return nil, err
	}
	text := ""
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = tc.Text
			break
		}
	}
	if res.IsError {
		if text == "" {
			text = name + ": the tool failed without a message"
		}
		return nil, &ToolError{Tool: name, Msg: text}
	}
	if !json.Valid([]byte(text)) {
		return nil, &errdefs.ContainerError{Op: "tool call", Container: name, Reason: errdefs.ErrExecFailed,
			Msg: "podbot-sidecar returned a result that is not JSON"}
	}
	return json.RawMessage(text), nil
}

// unknownTool is the refusal for a tool no backend offers.
func unknownTool(name string, specs []tools.Spec) error {
	names := make([]string, 0, len(specs))
	for _, s := range specs {
		names = append(names, s.Name)
	}
	return &tools.ToolError{Tool: name, Reason: errdefs.ErrNotFound,
		Msg: "no such tool; use one of " + strings.Join(names, ", ")}
}
