//go:build !unix

package sandbox

// noFollow is not available here; copies check the entry type first.
const noFollow = 0

// openNoWait adds nothing here: there are no FIFOs to wait on.
const openNoWait = 0
