//go:build !unix

package main

import "os"

// pollable returns f unchanged where the runtime cannot poll pipes.
func pollable(f *os.File) *os.File { return f }
