//go:build e2e

package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// waitFor polls buf until it contains want or the deadline passes, calling
// poke (if set) between polls.
func waitFor(t *testing.T, buf *lockedBuffer, want string, within time.Duration, poke func()) bool {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if strings.Contains(buf.String(), want) {
			return true
		}
		if poke != nil {
			poke()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return strings.Contains(buf.String(), want)
}

func TestExecTTYResize(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		name := createSandbox(t, ctx, e, "tty")

		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Fatalf("open a pseudo-terminal: %v", err)
		}
		defer ptmx.Close()
		defer tty.Close()
		if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 100}); err != nil {
			t.Fatal(err)
		}
		before, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}

		// No -t: podbot must see a terminal on stdin and stdout by itself.
		cmd := podbotCmd(t, ctx, e, "", "exec", name, "--", "sh", "-c",
			`stty size; while read line; do echo "got:$line"; stty size; done; echo bye`)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var out lockedBuffer
		go func() {
			buf := make([]byte, 4096)
			for {
				n, err := ptmx.Read(buf)
				_, _ = out.Write(buf[:n])
				if err != nil {
					return
				}
			}
		}()

		// The engines (API 1.41) size an exec's terminal only after it has
		// started, so a command that asks at once may still see 0 0: poke a
		// line until stty reports the initial size.
		poke := func() { _, _ = ptmx.Write([]byte("again\r")) }
		if !waitFor(t, &out, "40 100", 30*time.Second, poke) {
			_ = cmd.Process.Kill()
			t.Fatalf("the container did not see the 40x100 terminal; output %q", out.String())
		}
		if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 33, Cols: 77}); err != nil {
			t.Fatal(err)
		}
		// The resize travels SIGWINCH -> podbot -> engine; poke a line until
		// stty sees the new size.
		if !waitFor(t, &out, "33 77", 30*time.Second, poke) {
			_ = cmd.Process.Kill()
			t.Fatalf("the container did not see the resize to 33x77; output %q", out.String())
		}
		if !strings.Contains(out.String(), "got:again") {
			t.Errorf("input typed on the terminal did not reach the container: %q", out.String())
		}
		_, _ = ptmx.Write([]byte{4}) // Ctrl-D ends the read loop
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("podbot exec on a terminal: %v; output %q", err, out.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("podbot exec did not end after Ctrl-D; output %q", out.String())
		}
		after, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
			t.Errorf("terminal modes not restored: lflag %#x->%#x iflag %#x->%#x oflag %#x->%#x",
				before.Lflag, after.Lflag, before.Iflag, after.Iflag, before.Oflag, after.Oflag)
		}
	})
}
