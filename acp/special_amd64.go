//go:build !purego

package acp

// specialBlocks returns the index of the first byte of p that a string scan
// must look at ('"', '\\', a control character or a non-ASCII byte),
// searching only p's whole 16-byte blocks with SSE2; if they hold none, it
// returns len(p) rounded down to a multiple of 16. The caller checks the
// rest.
//
//go:noescape
func specialBlocks(p []byte) int

// vectorSpecial is true where specialBlocks is vectorized: a string scan
// then uses it alone instead of searching for '"' and '\\' first.
const vectorSpecial = true
