package tools

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectMCP serves ws in memory and returns a connected client session.
func connectMCP(t testing.TB, ws *Workspace) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := NewMCPServer(ws, "test").Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	return cs
}

func TestMCPRoundTrip(t *testing.T) {
	ws := newTestWorkspace(t)
	writeHostFile(t, ws, "hello.txt", "hello\nworld\n")
	cs := connectMCP(t, ws)
	ctx := context.Background()

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema == nil || tool.Description == "" {
			t.Errorf("tool %s lacks a schema or description", tool.Name)
		}
	}
	var want []string
	for _, s := range Specs() {
		want = append(want, s.Name)
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}

	tests := []struct {
		name    string
		args    map[string]any
		isError bool
		check   string // substring of the text content
	}{
		{ReadFileTool, map[string]any{"file_path": "hello.txt", "limit": 1}, false, `"content":"hello"`},
		{ShellExecuteTool, map[string]any{"command": []string{"echo", "via-mcp"}}, false, `"stdout":"via-mcp\n"`},
		{WriteFileTool, map[string]any{"file_path": "new.txt", "content": "x"}, false, `"bytes_written":1`},
		{LsTool, map[string]any{}, false, `"name":"new.txt"`},
		{GlobTool, map[string]any{"pattern": "*.txt"}, false, `"hello.txt"`},
		{GrepTool, map[string]any{"pattern": "wor"}, false, `"line":2`},
		{EditFileTool, map[string]any{"file_path": "new.txt", "old_string": "x", "new_string": "y"}, false, `"replacements":1`},
		{RmTool, map[string]any{"path": "new.txt"}, false, `"type":"file"`},
		{ReadFileTool, map[string]any{"file_path": "../../etc/passwd"}, true, `contains ".."`},
		{ReadFileTool, map[string]any{"file_path": "hello.txt", "bogus": 1}, true, "bogus"},
		{ReadFileTool, map[string]any{"file_path": 7}, true, "wrong type"},
		{ShellExecuteTool, map[string]any{"command": "ls -la"}, true, "wrong type"},
	}
	for _, tt := range tests {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tt.name, Arguments: tt.args})
		if err != nil {
			t.Fatalf("%s: protocol error %v", tt.name, err)
		}
		if res.IsError != tt.isError || len(res.Content) == 0 {
			t.Fatalf("%s %v: IsError %v content %v", tt.name, tt.args, res.IsError, res.Content)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if !strings.Contains(text, tt.check) {
			t.Errorf("%s %v: %q lacks %q", tt.name, tt.args, text, tt.check)
		}
		if !tt.isError {
			raw, err := json.Marshal(res.StructuredContent)
			if err != nil || !json.Valid(raw) || string(raw) == "null" {
				t.Errorf("%s: structured content %s, %v", tt.name, raw, err)
			}
		}
	}
}

// TestIsToolMatchesSpecs keeps IsTool and Specs in step.
func TestIsToolMatchesSpecs(t *testing.T) {
	for _, s := range Specs() {
		if !IsTool(s.Name) {
			t.Errorf("IsTool(%q) = false for a tool of Specs", s.Name)
		}
	}
	for _, name := range []string{PodmanShellTool, "", "shell", "READ_FILE", "read_file "} {
		if IsTool(name) {
			t.Errorf("IsTool(%q) = true", name)
		}
	}
}
