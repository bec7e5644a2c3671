//go:build !linux

package tools

// newChangeTracker has no implementation off Linux: shell_execute compares
// snapshots of the tree instead.
func newChangeTracker(string) changeTracker { return nil }
