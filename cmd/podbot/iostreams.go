package main

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// ioStreams carries the process's standard streams so commands can be run
// against buffers in tests. Results go to Out; status, progress and logs go
// to ErrOut.
type ioStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// InTTY and OutTTY say whether In and Out are terminals.
	InTTY, OutTTY bool
}

// systemIO returns the real standard streams.
func systemIO() *ioStreams {
	return &ioStreams{
		In:     os.Stdin,
		Out:    os.Stdout,
		ErrOut: os.Stderr,
		InTTY:  term.IsTerminal(int(os.Stdin.Fd())),
		OutTTY: term.IsTerminal(int(os.Stdout.Fd())),
	}
}

// testIO returns streams backed by buffers, none of them a terminal.
func testIO() (*ioStreams, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &ioStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}, &out, &errOut
}
