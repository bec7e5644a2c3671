package main

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/podbot/podbot/tools"
)

// TestServeStructuredFlag calls a tool on the server serve would run and
// checks --structured: by default a result comes as JSON text and as
// structured content; with --structured=false as the text alone.
func TestServeStructuredFlag(t *testing.T) {
	for _, tt := range []struct {
		args           []string
		wantStructured bool
	}{{nil, true}, {[]string{"--structured=false"}, false}} {
		opts, err := parseServe(tt.args, nil)
		if err != nil {
			t.Fatal(err)
		}
		ws, err := tools.NewWorkspace(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		ctx := context.Background()
		st, ct := mcp.NewInMemoryTransports()
		ss, err := newServer(ws, opts).Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.LsTool, Arguments: map[string]any{"path": "."}})
		if err != nil || res.IsError || len(res.Content) != 1 {
			t.Fatalf("%q: ls = %+v, %v", tt.args, res, err)
		}
		if got := res.StructuredContent != nil; got != tt.wantStructured {
			t.Errorf("%q: structured content present %v, want %v", tt.args, got, tt.wantStructured)
		}
		cs.Close()
		ss.Wait()
	}
}
