//go:build !linux

package tools

import "os"

// newChangeTracker has no implementation off Linux: shell_execute compares
// snapshots of the tree instead.
func newChangeTracker(string, *os.Root) changeTracker { return nil }
