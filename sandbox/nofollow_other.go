//go:build !unix

package sandbox

import "os"

// noFollow is not available here; copies check the entry type first.
const noFollow = 0

// openNoWait adds nothing here: there are no FIFOs to wait on.
const openNoWait = 0

// ownedByMe is true here: there are no file owners to compare.
func ownedByMe(os.FileInfo) bool { return true }
