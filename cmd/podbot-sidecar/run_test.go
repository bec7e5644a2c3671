package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{args: []string{"version"}, code: 0, stdout: version + "\n"},
		{args: []string{"help"}, code: 0, stdout: "usage: podbot-sidecar"},
		{args: nil, code: 2, stderr: "a command is required"},
		{args: []string{"bogus"}, code: 2, stderr: `unknown command "bogus"`},
		{args: []string{"init", "extra"}, code: 2, stderr: "init takes nothing, or serve and its flags"},
		{args: []string{"serve", "--nope"}, code: 2, stderr: "flag provided but not defined"},
		{args: []string{"serve", "pos"}, code: 2, stderr: "no positional arguments"},
		{args: []string{"serve", "--root", "/no/such/podbot/dir"}, code: 1, stderr: "workspace directory must exist"},
		{args: []string{"serve", "--gomaxprocs", "-1"}, code: 2, stderr: "--gomaxprocs -1 is out of range"},
		{args: []string{"serve", "--gomaxprocs", "5000"}, code: 2, stderr: "--gomaxprocs 5000 is out of range"},
		{args: []string{"serve", "--gomaxprocs", "two"}, code: 2, stderr: "invalid value"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tt.args, &out, &errOut)
		if code != tt.code || !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errOut.String(), tt.stderr) {
			t.Errorf("run(%q) = %d, stdout %q, stderr %q", tt.args, code, out.String(), errOut.String())
		}
	}
}

func TestParseServe(t *testing.T) {
	var errOut bytes.Buffer
	opts, err := parseServe([]string{"--root", "/srv/ws", "--tmp", "/run/tmp"}, &errOut)
	if err != nil || opts.root != "/srv/ws" || opts.tmp != "/run/tmp" {
		t.Fatalf("parseServe = %+v, %v", opts, err)
	}
	opts, err = parseServe(nil, &errOut)
	if err != nil || opts.root != "/workspace" || !opts.structured {
		t.Fatalf("defaults = %+v, %v", opts, err)
	}
	if opts.procs != 0 {
		t.Fatalf("default --gomaxprocs = %d, want 0 (Go's own choice)", opts.procs)
	}
	opts, err = parseServe([]string{"--structured=false"}, &errOut)
	if err != nil || opts.structured {
		t.Fatalf("--structured=false = %+v, %v", opts, err)
	}
	if opts.batch {
		t.Fatal("SCHED_BATCH is on without --batch")
	}
	opts, err = parseServe([]string{"--batch"}, &errOut)
	if err != nil || !opts.batch {
		t.Fatalf("--batch = %+v, %v", opts, err)
	}
	opts, err = parseServe([]string{"--gomaxprocs", "1"}, &errOut)
	if err != nil || opts.procs != 1 {
		t.Fatalf("--gomaxprocs 1 = %+v, %v", opts, err)
	}
}
