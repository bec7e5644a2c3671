//go:build !unix

package tools

// openNoWait adds nothing here: there are no FIFOs to wait on.
const openNoWait = 0

// openNoFollow is not available here.
const openNoFollow = 0
