package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
)

// parse runs cmd with args and returns the error RunE (or flag parsing) gave.
func parse(t *testing.T, cmd *cobra.Command, args ...string) error {
	t.Helper()
	f := newFactory(func() *ioStreams { ios, _, _ := testIO(); return ios }(), nil)
	root := &cobra.Command{Use: "podbot", SilenceErrors: true, SilenceUsage: true}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{msg: err.Error()} })
	root.PersistentFlags().StringVar(&f.global.image, "image", "", "")
	root.AddCommand(cmd)
	wrapArgs(root)
	root.SetArgs(append([]string{cmd.Name()}, args...))
	ios, _, _ := testIO()
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	return root.ExecuteContext(context.Background())
}

func isUsage(err error) bool {
	_, ok := err.(*usageError)
	return ok
}

func TestCreateFlags(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		wantUsage string
		check     func(t *testing.T, o *createOptions)
	}{
		{name: "defaults", check: func(t *testing.T, o *createOptions) {
			if o.readOnlySet || o.privilegedSet || o.memory != "" || len(o.command) != 0 {
				t.Errorf("unset flags recorded as set: %+v", o)
			}
		}},
		{name: "all flags", args: []string{"--name", "box", "--network", "none", "--read-only", "--memory", "256m",
			"--cpus", "1.5", "--pids-limit", "100", "--privileged", "--", "sleep", "60"},
			check: func(t *testing.T, o *createOptions) {
				lib, err := o.toLibrary(config.Config{Image: "img"}, "/sidecar")
				if err != nil {
					t.Fatal(err)
				}
				if lib.Name != "box" || lib.Network != "none" || lib.MemoryBytes != 256<<20 || lib.NanoCPUs != 1_500_000_000 ||
					lib.PidsLimit != 100 || lib.ReadOnlyRootfs == nil || !*lib.ReadOnlyRootfs || lib.Privileged == nil || !*lib.Privileged ||
					!reflect.DeepEqual(lib.Command, []string{"sleep", "60"}) || lib.SidecarPath != "/sidecar" {
					t.Errorf("library options %+v", lib)
				}
			}},
		{name: "read-only=false is an explicit override", args: []string{"--read-only=false"}, check: func(t *testing.T, o *createOptions) {
			lib, _ := o.toLibrary(config.Config{}, "")
			if lib.ReadOnlyRootfs == nil || *lib.ReadOnlyRootfs {
				t.Errorf("ReadOnlyRootfs = %v, want an explicit false", lib.ReadOnlyRootfs)
			}
		}},
		{name: "bad memory", args: []string{"--memory", "lots"}, wantUsage: "--memory"},
		{name: "zero memory", args: []string{"--memory", "0"}, wantUsage: "--memory"},
		{name: "negative cpus", args: []string{"--cpus", "-1"}, wantUsage: "--cpus"},
		{name: "zero pids", args: []string{"--pids-limit", "0"}, wantUsage: "--pids-limit"},
		{name: "command without --", args: []string{"sleep"}, wantUsage: "after --"},
		{name: "unknown flag", args: []string{"--bogus"}, wantUsage: "bogus"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *createOptions
			err := parse(t, newCreateCmd(nil, func(_ context.Context, o *createOptions) error { got = o; return nil }), tc.args...)
			if tc.wantUsage != "" {
				if !isUsage(err) || !strings.Contains(err.Error(), tc.wantUsage) {
					t.Fatalf("err = %v, want a usage error naming %q", err, tc.wantUsage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, got)
		})
	}
}

func TestExecFlags(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		wantUsage string
		want      execOptions
	}{
		{name: "with --", args: []string{"box", "--", "sh", "-c", "exit 3"}, want: execOptions{ref: "box", command: []string{"sh", "-c", "exit 3"}}},
		{name: "without --, flags after the container belong to the command", args: []string{"box", "ls", "-la"},
			want: execOptions{ref: "box", command: []string{"ls", "-la"}}},
		{name: "all flags", args: []string{"-d", "-e", "A=1", "-e", "B=x=y", "-w", "/tmp", "-u", "1000", "--any", "abc", "--", "true"},
			want: execOptions{detach: true, any: true, env: []string{"A=1", "B=x=y"}, workdir: "/tmp", user: "1000", ref: "abc", command: []string{"true"}}},
		{name: "-T", args: []string{"-T", "box", "cat"}, want: execOptions{noTTY: true, ref: "box", command: []string{"cat"}}},
		{name: "--agent-env", args: []string{"--agent-env", "box", "--", "claude"}, want: execOptions{agentEnv: true, ref: "box", command: []string{"claude"}}},
		{name: "no command", args: []string{"box"}, wantUsage: "no command"},
		{name: "no command after --", args: []string{"box", "--"}, wantUsage: "no command"},
		{name: "no container", args: nil, wantUsage: "requires at least 1 arg"},
		{name: "-t and -T", args: []string{"-t", "-T", "box", "sh"}, wantUsage: "contradict"},
		{name: "-d and -t", args: []string{"-d", "-t", "box", "sh"}, wantUsage: "-d"},
		{name: "bad env", args: []string{"-e", "NOVALUE", "box", "sh"}, wantUsage: "KEY=VALUE"},
		{name: "empty env key", args: []string{"-e", "=v", "box", "sh"}, wantUsage: "KEY=VALUE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *execOptions
			err := parse(t, newExecCmd(nil, func(_ context.Context, o *execOptions) error { got = o; return nil }), tc.args...)
			if tc.wantUsage != "" {
				if !isUsage(err) || !strings.Contains(err.Error(), tc.wantUsage) {
					t.Fatalf("err = %v, want a usage error naming %q", err, tc.wantUsage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("parsed %+v, want %+v", *got, tc.want)
			}
		})
	}
}

func TestExecWantTTY(t *testing.T) {
	cases := []struct {
		opts          execOptions
		inTTY, outTTY bool
		want          bool
	}{
		{execOptions{}, true, true, true},
		{execOptions{}, true, false, false},
		{execOptions{}, false, true, false},
		{execOptions{tty: true}, false, false, true},
		{execOptions{noTTY: true}, true, true, false},
		{execOptions{detach: true}, true, true, false},
	}
	for _, tc := range cases {
		if got := tc.opts.wantTTY(tc.inTTY, tc.outTTY); got != tc.want {
			t.Errorf("%+v in=%v out=%v: tty %v, want %v", tc.opts, tc.inTTY, tc.outTTY, got, tc.want)
		}
	}
}

func TestContainerCommandFlags(t *testing.T) {
	t.Run("ps", func(t *testing.T) {
		var got *psOptions
		if err := parse(t, newPsCmd(nil, func(_ context.Context, o *psOptions) error { got = o; return nil }), "-a", "--size", "--json"); err != nil {
			t.Fatal(err)
		}
		if *got != (psOptions{all: true, size: true, json: true}) {
			t.Errorf("ps parsed %+v", *got)
		}
		if err := parse(t, newPsCmd(nil, nil), "extra"); !isUsage(err) {
			t.Errorf("ps with an argument: %v, want a usage error", err)
		}
	})
	t.Run("stop", func(t *testing.T) {
		var got *stopOptions
		if err := parse(t, newStopCmd(nil, func(_ context.Context, o *stopOptions) error { got = o; return nil }), "-t", "1", "a", "b"); err != nil {
			t.Fatal(err)
		}
		if got.timeout != 1 || !reflect.DeepEqual(got.refs, []string{"a", "b"}) {
			t.Errorf("stop parsed %+v", *got)
		}
		if err := parse(t, newStopCmd(nil, func(_ context.Context, o *stopOptions) error { got = o; return nil }), "a"); err != nil || got.timeout != 10 {
			t.Errorf("stop default timeout %d (%v), want 10", got.timeout, err)
		}
		if err := parse(t, newStopCmd(nil, nil), "-t", "-1", "a"); !isUsage(err) {
			t.Errorf("stop -t -1: %v, want a usage error", err)
		}
		if err := parse(t, newStopCmd(nil, nil)); !isUsage(err) {
			t.Errorf("stop with no container: %v, want a usage error", err)
		}
	})
	t.Run("start", func(t *testing.T) {
		var got *startOptions
		if err := parse(t, newStartCmd(nil, func(_ context.Context, o *startOptions) error { got = o; return nil }), "--any", "a", "b"); err != nil {
			t.Fatal(err)
		}
		if !got.any || !reflect.DeepEqual(got.refs, []string{"a", "b"}) {
			t.Errorf("start parsed %+v", *got)
		}
		if err := parse(t, newStartCmd(nil, nil)); !isUsage(err) {
			t.Errorf("start with no container: %v, want a usage error", err)
		}
	})
	t.Run("rm", func(t *testing.T) {
		var got *rmOptions
		if err := parse(t, newRmCmd(nil, func(_ context.Context, o *rmOptions) error { got = o; return nil }), "-f", "--any", "a"); err != nil {
			t.Fatal(err)
		}
		if !got.force || !got.any || !reflect.DeepEqual(got.refs, []string{"a"}) {
			t.Errorf("rm parsed %+v", *got)
		}
	})
	t.Run("logs", func(t *testing.T) {
		var got *logsOptions
		if err := parse(t, newLogsCmd(nil, func(_ context.Context, o *logsOptions) error { got = o; return nil }), "-f", "--tail", "5", "a"); err != nil {
			t.Fatal(err)
		}
		if *got != (logsOptions{follow: true, tail: 5, ref: "a"}) {
			t.Errorf("logs parsed %+v", *got)
		}
		if err := parse(t, newLogsCmd(nil, nil), "a", "b"); !isUsage(err) {
			t.Errorf("logs with two containers: %v, want a usage error", err)
		}
		if err := parse(t, newLogsCmd(nil, nil), "--tail", "-2", "a"); !isUsage(err) {
			t.Errorf("logs --tail -2: %v, want a usage error", err)
		}
	})
	t.Run("prune", func(t *testing.T) {
		var got *pruneOptions
		if err := parse(t, newPruneCmd(nil, func(_ context.Context, o *pruneOptions) error { got = o; return nil }), "--dry-run"); err != nil {
			t.Fatal(err)
		}
		if !got.dryRun {
			t.Error("prune --dry-run not parsed")
		}
	})
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1.0KiB", 1536: "1.5KiB", 5 << 20: "5.0MiB", 3 << 30: "3.0GiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestExecAgentEnv: --agent-env reads the allowlisted variables from
// podbot's environment (never argv), puts -e entries after them, and
// teaches the redactor their values.
func TestExecAgentEnv(t *testing.T) {
	cfgPath := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfgPath, []byte("[agent]\nenv_allowlist = [\"MY_KEY\", \"UNSET_KEY\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ios, _, _ := testIO()
	f := newFactory(ios, []string{"MY_KEY=s3cret-value", "OTHER=not-passed"})
	f.global.configPath = cfgPath
	env, err := f.agentEnv([]string{"MY_KEY=override"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(env, []string{"MY_KEY=s3cret-value", "MY_KEY=override"}) {
		t.Errorf("env = %v", env)
	}
	if got := f.redactor.Redact("token s3cret-value"); strings.Contains(got, "s3cret-value") {
		t.Errorf("the redactor does not know the passed value: %q", got)
	}
}

// TestPrintPrune: the kubernetes backend's orphans print beside the
// engine's rows, and a result with only them is not "nothing to prune".
func TestPrintPrune(t *testing.T) {
	ios, out, errOut := testIO()
	printPrune(&factory{ios: ios}, &pruneOptions{}, podbot.PruneResult{DryRun: true,
		Containers: []podbot.Container{{ID: "0123456789abcdef0123", Name: "ended"}},
		Orphans:    []podbot.PrunedObject{{Kind: "NetworkPolicy", Name: "gone"}, {Kind: "Secret", Name: "gone"}}})
	want := "would remove container ended (0123456789ab)\nwould remove NetworkPolicy gone (its sandbox is gone)\nwould remove Secret gone (its sandbox is gone)\n"
	if out.String() != want || !strings.Contains(errOut.String(), "would remove: containers 1") {
		t.Errorf("stdout %q, stderr %q", out, errOut)
	}
	ios, out, errOut = testIO()
	printPrune(&factory{ios: ios}, &pruneOptions{}, podbot.PruneResult{Orphans: []podbot.PrunedObject{{Kind: "Secret", Name: "gone"}}})
	if out.String() != "removed Secret gone (its sandbox is gone)\n" || strings.Contains(errOut.String(), "nothing to prune") {
		t.Errorf("stdout %q, stderr %q", out, errOut)
	}
	// A gone pool member's token directory, and --json: one object.
	ios, out, _ = testIO()
	res := podbot.PruneResult{DryRun: true, TokenDirs: []string{"podbot-pool-a-000000000001"}}
	if err := printPrune(&factory{ios: ios}, &pruneOptions{}, res); err != nil || !strings.Contains(out.String(), "would remove GitHub token directory of pool member podbot-pool-a-000000000001") {
		t.Errorf("token dirs: %q %v", out, err)
	}
	ios, out, _ = testIO()
	if err := printPrune(&factory{ios: ios}, &pruneOptions{json: true}, res); err != nil {
		t.Fatal(err)
	}
	var back podbot.PruneResult
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || !back.DryRun || len(back.TokenDirs) != 1 {
		t.Errorf("--json: %q %v", out, err)
	}
}
