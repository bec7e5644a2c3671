// Command acpreport is an ACP agent for podbot's e2e tests: it answers
// initialize and session/new, and on a prompt asks the client to read a
// file and to open a terminal, then sends one agent message holding a
// JSON report of the client capabilities it was shown and the answers it
// got, and ends the turn.
package main

import (
	"context"
	"encoding/json"
	"os"
	"sync"

	acp "github.com/coder/acp-go-sdk"
)

// Report is what the agent tells the client.
type Report struct {
	Capabilities  json.RawMessage `json:"capabilities"`
	FsError       string          `json:"fs_error"`
	TerminalError string          `json:"terminal_error"`
}

type agent struct {
	acp.Agent // the methods not written here are never called in the tests
	conn      *acp.AgentSideConnection
	mu        sync.Mutex
	caps      json.RawMessage
}

func (a *agent) Initialize(_ context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	b, _ := json.Marshal(p.ClientCapabilities)
	a.mu.Lock()
	a.caps = b
	a.mu.Unlock()
	return acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersionNumber}, nil
}

func (a *agent) NewSession(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	return acp.NewSessionResponse{SessionId: "s1"}, nil
}

func (a *agent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (a *agent) Cancel(context.Context, acp.CancelNotification) error { return nil }

func (a *agent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	a.mu.Lock()
	r, conn := Report{Capabilities: a.caps}, a.conn
	a.mu.Unlock()
	if _, err := conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: p.SessionId, Path: "/etc/hostname"}); err != nil {
		r.FsError = err.Error()
	}
	if _, err := conn.CreateTerminal(ctx, acp.CreateTerminalRequest{SessionId: p.SessionId, Command: "id"}); err != nil {
		r.TerminalError = err.Error()
	}
	b, _ := json.Marshal(r)
	if err := conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId, Update: acp.UpdateAgentMessageText(string(b))}); err != nil {
		return acp.PromptResponse{}, err
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

func main() {
	a := &agent{}
	c := acp.NewAgentSideConnection(a, os.Stdout, os.Stdin)
	a.mu.Lock()
	a.conn = c
	a.mu.Unlock()
	<-c.Done()
}
