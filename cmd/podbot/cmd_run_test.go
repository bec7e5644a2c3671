package main

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

func TestRunFlags(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantUsage bool
		want      runOptions
		overrides map[string]string
	}{
		{name: "repo with default branch", args: []string{"--repo", "acme/widgets"},
			want: runOptions{repo: "acme/widgets", branch: "main"}, overrides: map[string]string{"workspace.source": "github_clone", "workspace.host_path": ""}},
		{name: "workspace, agent, mode, rm, extra args", args: []string{"--workspace", "/src/w", "--agent", "codex", "--agent-mode", "podbot", "--rm", "--", "--model", "x"},
			want:      runOptions{workspace: "/src/w", branch: "main", agent: "codex", mode: "podbot", remove: true, extraArgs: []string{"--model", "x"}},
			overrides: map[string]string{"agent.kind": "codex", "agent.mode": "podbot", "workspace.source": "host_mount", "workspace.host_path": "/src/w"}},
		{name: "repo and workspace conflict", args: []string{"--repo", "a/b", "--workspace", "/w"}, wantUsage: true},
		{name: "argument before --", args: []string{"stray"}, wantUsage: true},
		{name: "empty branch", args: []string{"--repo", "a/b", "--branch", ""}, wantUsage: true},
		{name: "unknown flag", args: []string{"--nope"}, wantUsage: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got *runOptions
			err := parse(t, newRunCmd(nil, func(_ context.Context, o *runOptions) error { got = o; return nil }), tc.args...)
			if tc.wantUsage {
				if !isUsage(err) {
					t.Fatalf("err = %v, want a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("options = %+v, want %+v", *got, tc.want)
			}
			if o := got.configOverrides(); !reflect.DeepEqual(o, tc.overrides) {
				t.Errorf("overrides = %v, want %v", o, tc.overrides)
			}
		})
	}
}

// podbot run refuses hosted modes and a missing agent before touching the
// engine, naming the key, and writes nothing to stdout.
func TestRunRefusesBeforeLaunch(t *testing.T) {
	tests := []struct {
		args    []string
		wantKey string
	}{
		{[]string{"run", "--agent", "codex", "--agent-mode", "codex_app_server"}, "agent.mode"},
		{[]string{"run", "--agent", "claude", "--agent-mode", "acp"}, "agent.mode"},
		{[]string{"run", "--agent", "custom"}, "agent.command"},
	}
	for _, tc := range tests {
		code, out, errOut := run(t, []string{"PODBOT_ENGINE_SOCKET=unix:///nonexistent/podbot.sock"}, tc.args...)
		if code != exitConfig {
			t.Errorf("%v: exit %d, want %d; stderr %q", tc.args, code, exitConfig, errOut)
		}
		if !strings.Contains(errOut, tc.wantKey) {
			t.Errorf("%v: stderr %q does not name %s", tc.args, errOut, tc.wantKey)
		}
		if out != "" {
			t.Errorf("%v: stdout %q, want nothing", tc.args, out)
		}
	}
}
