package sandbox

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/podbot/podbot/tools"
)

func newTestLocal(t *testing.T) (*Local, *recorder) {
	t.Helper()
	rec := newRecorder()
	l, err := NewUnsafeLocal(context.Background(), LocalOptions{Options: Options{WorkspaceRoot: t.TempDir(), OnEvent: rec.on}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	return l, rec
}

func TestLocalRunsTheTools(t *testing.T) {
	l, rec := newTestLocal(t)
	var s Session = l
	mustCall(t, s, tools.WriteFileTool, `{"file_path":"d/a.txt","content":"one\ntwo\n"}`)
	mustCall(t, s, tools.EditFileTool, `{"file_path":"d/a.txt","old_string":"two","new_string":"three"}`)
	if out := mustCall(t, s, tools.ReadFileTool, `{"file_path":"d/a.txt"}`); !strings.Contains(string(out), "three") {
		t.Errorf("read_file = %s", out)
	}
	if res := shell(t, s, "cat", "d/a.txt"); res.Stdout != "one\nthree\n" {
		t.Errorf("shell_execute = %+v", res)
	}
	if out := mustCall(t, s, tools.GrepTool, `{"pattern":"thr"}`); !strings.Contains(string(out), "a.txt") {
		t.Errorf("grep = %s", out)
	}
	mustCall(t, s, tools.RmTool, `{"path":"d"}`)
	if in := l.Info(); in.Backend != BackendUnsafeLocal || in.StartedAt.IsZero() || in.LastUsedAt.IsZero() {
		t.Errorf("info = %+v", in)
	}
	if rec.count(EventToolCall) != 6 || rec.count(EventCreated) != 1 {
		t.Errorf("events %v", rec.kinds())
	}
	if !strings.Contains(l.Prompt(), "unsafe") {
		t.Error("the local prompt does not say it is unsafe")
	}
}

func TestLocalRefusals(t *testing.T) {
	l, _ := newTestLocal(t)
	for _, tt := range []struct{ name, args string }{
		{tools.PodmanShellTool, `{"action":"start"}`},
		{tools.ReadFileTool, `{"file_path":"../x"}`},
		{"nope", `{}`},
	} {
		if _, err := l.Call(context.Background(), tt.name, []byte(tt.args)); !errors.Is(err, tools.ErrInvalidInput) {
			t.Errorf("%s %s: err %v, want a tool error", tt.name, tt.args, err)
		}
	}
}

func TestLocalCloneAndClose(t *testing.T) {
	l, _ := newTestLocal(t)
	mustCall(t, l, tools.WriteFileTool, `{"file_path":"a.txt","content":"x"}`)
	c, err := l.Clone(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mustCall(t, c, tools.ReadFileTool, `{"file_path":"a.txt"}`)
	mustCall(t, c, tools.RmTool, `{"path":"a.txt"}`)
	mustCall(t, l, tools.ReadFileTool, `{"file_path":"a.txt"}`)
	dir := c.Info().WorkspaceDir
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("workspace left after Close: %v", err)
	}
	if _, err := c.Call(context.Background(), tools.LsTool, nil); err == nil {
		t.Error("call after Close succeeded")
	}
}

func TestMCPServerForwardsToTheSession(t *testing.T) {
	l, _ := newTestLocal(t)
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := NewMCPServer(l, "test").Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != len(tools.Specs()) {
		t.Fatalf("tools/list: %v, %v", list, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.ShellExecuteTool, Arguments: map[string]any{"command": []string{"echo", "hi"}}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"stdout":"hi\n"`) {
		t.Fatalf("tools/call: %+v, %v", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.ReadFileTool, Arguments: map[string]any{"file_path": "/etc/passwd"}})
	if err != nil || !res.IsError {
		t.Fatalf("refused call: %+v, %v", res, err)
	}
}
