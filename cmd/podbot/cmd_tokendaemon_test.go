package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTokenDaemonFlags(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		want      *tokenDaemonOptions
		wantUsage bool
	}{
		{name: "all", args: []string{"--all"}, want: &tokenDaemonOptions{all: true}},
		{name: "one container", args: []string{"--container", "podbot-claude-1"}, want: &tokenDaemonOptions{container: "podbot-claude-1"}},
		{name: "intervals", args: []string{"--all", "--check-interval", "5s", "--list-interval", "1m"},
			want: &tokenDaemonOptions{all: true, checkInterval: 5 * time.Second, listInterval: time.Minute}},
		{name: "neither", args: nil, wantUsage: true},
		{name: "both", args: []string{"--all", "--container", "x"}, wantUsage: true},
		{name: "positional", args: []string{"podbot-claude-1"}, want: &tokenDaemonOptions{container: "podbot-claude-1"}},
		{name: "positional and the same flag", args: []string{"x", "--container", "x"}, want: &tokenDaemonOptions{container: "x"}},
		{name: "positional and another flag", args: []string{"x", "--container", "y"}, wantUsage: true},
		{name: "positional and all", args: []string{"x", "--all"}, wantUsage: true},
		{name: "two positionals", args: []string{"x", "y"}, wantUsage: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ios, _, _ := testIO()
			var got *tokenDaemonOptions
			cmd := newTokenDaemonCmd(newFactory(ios, nil), func(_ context.Context, o *tokenDaemonOptions) error {
				got = o
				return nil
			})
			wrapArgs(cmd)
			cmd.SetArgs(tc.args)
			cmd.SetOut(ios.Out)
			cmd.SetErr(ios.ErrOut)
			err := cmd.ExecuteContext(context.Background())
			var ue *usageError
			if tc.wantUsage {
				if !errors.As(err, &ue) || got != nil {
					t.Fatalf("err = %v (ran: %v), want a usage error before running", err, got != nil)
				}
				return
			}
			if err != nil || got == nil || *got != *tc.want {
				t.Fatalf("err = %v, options %+v, want %+v", err, got, tc.want)
			}
		})
	}
}

func TestTokenDaemonNeedsGitHubApp(t *testing.T) {
	code, _, errOut := run(t, nil, "token-daemon", "--all")
	if code != exitConfig || !strings.Contains(errOut, "github.app_id") {
		t.Fatalf("exit %d, stderr %q; want exit %d naming github.app_id", code, errOut, exitConfig)
	}
}
