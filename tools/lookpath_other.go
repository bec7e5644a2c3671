//go:build !linux

package tools

// mountReadOnly reports false: outside Linux nothing is cached.
func mountReadOnly(string) bool { return false }
