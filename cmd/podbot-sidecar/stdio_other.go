//go:build !unix

package main

import "os"

// pollable returns f unchanged where the runtime cannot poll pipes.
func pollable(f *os.File) (_ *os.File, polled bool) { return f, false }
