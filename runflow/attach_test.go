package runflow

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/term"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
)

// fakeExec records the exec it was asked for and plays a scripted answer.
type fakeExec struct {
	got    engine.ExecOptions
	id     string
	code   int
	err    error
	output string
	// during runs while the "agent" runs, before output is written.
	during func()
}

func (f *fakeExec) Exec(ctx context.Context, id string, opts engine.ExecOptions) (int, error) {
	f.got, f.id = opts, id
	if f.during != nil {
		f.during()
	}
	if f.output != "" {
		_, _ = io.WriteString(opts.Stdout, f.output)
	}
	return f.code, f.err
}

func TestUseTTY(t *testing.T) {
	tests := []struct {
		want, in, out, tty bool
	}{
		{true, true, true, true},
		{true, false, true, false},
		{true, true, false, false},
		{false, true, true, false},
	}
	for _, tt := range tests {
		if got := UseTTY(tt.want, tt.in, tt.out); got != tt.tty {
			t.Errorf("UseTTY(%v, %v, %v) = %v, want %v", tt.want, tt.in, tt.out, got, tt.tty)
		}
	}
}

func TestAttach(t *testing.T) {
	execErr := &errdefs.ContainerError{Op: "exec", Reason: errdefs.ErrExecFailed}
	tests := []struct {
		name      string
		agent     Agent
		term      Terminal
		fake      fakeExec
		wantCode  int
		wantTTY   bool
		wantStdin bool
		wantErr   error
		wantFirst bool
	}{
		{
			name:  "exit status passes through, no terminal",
			agent: Agent{Cmd: []string{"stub", "-x"}, Env: []string{"ANTHROPIC_API_KEY=k"}, User: "root", WorkDir: "/workspace", TTY: true, Stdin: true},
			term:  Terminal{In: strings.NewReader("input"), InTTY: false, OutTTY: true},
			fake:  fakeExec{code: 7, output: "hello"}, wantCode: 7, wantStdin: true, wantFirst: true,
		},
		{
			name:  "no stdin when the plan attaches none",
			agent: Agent{Cmd: []string{"stub"}},
			term:  Terminal{In: strings.NewReader("input")},
			fake:  fakeExec{}, wantCode: 0,
		},
		{
			name:  "exec error is returned",
			agent: Agent{Cmd: []string{"stub"}},
			fake:  fakeExec{err: execErr}, wantErr: errdefs.ErrExecFailed,
		},
		{
			name:    "empty command refused",
			agent:   Agent{},
			wantErr: errdefs.ErrInvalidValue,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := tt.fake
			var out bytes.Buffer
			tt.term.Out = &out
			res, err := Attach(context.Background(), &fake, Options{ContainerID: "c1", Agent: tt.agent, Terminal: tt.term})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != tt.wantCode || res.TTY != tt.wantTTY {
				t.Errorf("result = %+v, want code %d tty %v", res, tt.wantCode, tt.wantTTY)
			}
			if fake.id != "c1" || strings.Join(fake.got.Cmd, " ") != strings.Join(tt.agent.Cmd, " ") ||
				fake.got.User != tt.agent.User || fake.got.WorkDir != tt.agent.WorkDir || fake.got.TTY != tt.wantTTY ||
				strings.Join(fake.got.Env, " ") != strings.Join(tt.agent.Env, " ") {
				t.Errorf("exec = %q %+v", fake.id, fake.got)
			}
			if (fake.got.Stdin != nil) != tt.wantStdin {
				t.Errorf("stdin attached = %v, want %v", fake.got.Stdin != nil, tt.wantStdin)
			}
			if res.FirstOutput.IsZero() == tt.wantFirst {
				t.Errorf("first output = %v, want recorded %v", res.FirstOutput, tt.wantFirst)
			}
			if tt.fake.output != "" && out.String() != tt.fake.output {
				t.Errorf("out = %q", out.String())
			}
		})
	}
}

// TestAttachRawModeRestored runs Attach on a real pseudo-terminal: the
// terminal is raw while the agent runs, the initial size is passed on, and
// the previous state is back afterwards, also when the exec fails.
func TestAttachRawModeRestored(t *testing.T) {
	for _, fail := range []bool{false, true} {
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Fatal(err)
		}
		if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 33, Cols: 101}); err != nil {
			t.Fatal(err)
		}
		before, err := term.GetState(int(tty.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		var rawDuring bool
		fake := &fakeExec{during: func() { rawDuring = isRaw(t, tty) }}
		if fail {
			fake.err = context.Canceled
		}
		_, err = Attach(context.Background(), fake, Options{
			ContainerID: "c1",
			Agent:       Agent{Cmd: []string{"stub"}, TTY: true, Stdin: true},
			Terminal:    Terminal{In: tty, Out: tty, Err: tty, InTTY: true, OutTTY: true},
		})
		if fail != (err != nil) {
			t.Fatalf("fail=%v: err = %v", fail, err)
		}
		if !rawDuring {
			t.Errorf("fail=%v: terminal not raw while the agent ran", fail)
		}
		if !fake.got.TTY || fake.got.InitialSize != (engine.Size{Height: 33, Width: 101}) {
			t.Errorf("fail=%v: exec tty=%v size=%+v", fail, fake.got.TTY, fake.got.InitialSize)
		}
		if isRaw(t, tty) {
			t.Errorf("fail=%v: terminal still raw after Attach", fail)
		}
		after, _ := term.GetState(int(tty.Fd()))
		if before == nil || after == nil {
			t.Fatal("no terminal state")
		}
		ptmx.Close()
		tty.Close()
	}
}

// isRaw reports whether echo is off on the terminal (raw mode turns it off).
func isRaw(t *testing.T, f *os.File) bool {
	t.Helper()
	// MakeRaw on an already raw terminal is harmless; compare the echo bit
	// through a restore round trip instead of reaching into termios.
	state, err := term.GetState(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	restore, err := MakeRaw(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := term.GetState(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	restore()
	_ = term.Restore(int(f.Fd()), state)
	return *state == *raw
}

func TestMakeRawNotATerminal(t *testing.T) {
	restore, err := MakeRaw(strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	restore()
	restore()
	if IsTerminal(strings.NewReader("")) {
		t.Error("a strings.Reader is not a terminal")
	}
	if _, ok := Size(&bytes.Buffer{}); ok {
		t.Error("a buffer has no terminal size")
	}
}
