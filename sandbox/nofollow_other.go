//go:build !unix

package sandbox

// noFollow is not available here; copies check the entry type first.
const noFollow = 0
