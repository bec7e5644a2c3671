package main

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestHostFlags(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		want      map[string]string
		wantExtra []string
		usage     bool
	}{
		{"acp custom", []string{"--agent", "custom", "--agent-mode", "acp"},
			map[string]string{"agent.kind": "custom", "agent.mode": "acp"}, nil, false},
		{"delegation and extra args", []string{"--agent", "codex", "--agent-mode", "codex_app_server", "--allow-host-delegation", "--", "-c", "x=1"},
			map[string]string{"agent.kind": "codex", "agent.mode": "codex_app_server", "agent.allow_host_delegation": "true"}, []string{"-c", "x=1"}, false},
		{"acp kind needs no mode", []string{"--agent", "opencode"},
			map[string]string{"agent.kind": "opencode", "agent.mode": "acp"}, nil, false},
		{"acp kind explicit mode kept", []string{"--agent", "gemini", "--agent-mode", "codex_app_server"},
			map[string]string{"agent.kind": "gemini", "agent.mode": "codex_app_server"}, nil, false},
		{"terminal auth", []string{"--allow-terminal-auth"},
			map[string]string{"agent.allow_terminal_auth": "true"}, nil, false},
		{"nothing set keeps the config", nil, map[string]string{}, nil, false},
		{"positional before --", []string{"stray"}, nil, nil, true},
		{"workspace and repo", []string{"--workspace", "/src", "--repo", "a/b", "--branch", "main"}, nil, nil, true},
		{"branch without repo", []string{"--branch", "main"}, nil, nil, true},
		{"repo without branch", []string{"--repo", "a/b"}, nil, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ios, _, _ := testIO()
			var got *hostOptions
			cmd := newHostCmd(newFactory(ios, nil), func(_ context.Context, o *hostOptions) error { got = o; return nil })
			cmd.SetArgs(tc.args)
			cmd.SetOut(ios.ErrOut)
			cmd.SetErr(ios.ErrOut)
			err := cmd.ExecuteContext(context.Background())
			var ue *usageError
			if tc.usage {
				if !errors.As(err, &ue) {
					t.Fatalf("err = %v, want a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := got.configOverrides()
			if len(m) != len(tc.want) {
				t.Errorf("overrides %v, want %v", m, tc.want)
			}
			for k, v := range tc.want {
				if m[k] != v {
					t.Errorf("%s = %q, want %q", k, m[k], v)
				}
			}
			if strings.Join(got.extraArgs, " ") != strings.Join(tc.wantExtra, " ") {
				t.Errorf("extra args %q, want %q", got.extraArgs, tc.wantExtra)
			}
		})
	}
}

// A failure before the bridge starts writes nothing to stdout.
func TestHostConfigErrorsKeepStdoutEmpty(t *testing.T) {
	tests := []struct {
		args    []string
		wantKey string
	}{
		{[]string{"host", "--agent", "claude", "--agent-mode", "acp"}, "agent.mode"},
		{[]string{"host", "--agent", "codex", "--agent-mode", "podbot"}, "agent.mode"},
		{[]string{"host", "--agent", "custom", "--agent-mode", "acp"}, "agent.command"},
		{[]string{"host", "--agent", "gemini", "--agent-mode", "codex_app_server"}, "agent.mode"},
		{[]string{"host", "--agent", "aider"}, "agent.kind"},
	}
	for _, tc := range tests {
		code, out, errOut := run(t, []string{"PODBOT_ENGINE_SOCKET=unix:///nonexistent/podbot.sock"}, tc.args...)
		if code != exitConfig {
			t.Errorf("%v: exit %d, want %d; stderr %q", tc.args, code, exitConfig, errOut)
		}
		if out != "" {
			t.Errorf("%v: stdout %q, want nothing", tc.args, out)
		}
		if !strings.Contains(errOut, tc.wantKey) {
			t.Errorf("%v: stderr %q does not name %s", tc.args, errOut, tc.wantKey)
		}
	}
}
