//go:build !amd64 || purego

package acp

// specialBlocks is the portable form of the amd64 assembly: the index of
// the first byte of p's whole 16-byte blocks that a string scan must look
// at, or len(p) rounded down to a multiple of 16 if there is none.
func specialBlocks(p []byte) int {
	n := len(p) &^ 15
	if i := nextSpecial(p[:n], 0); i < n {
		return i
	}
	return n
}

// vectorSpecial is false here: a string scan searches for '"' and '\\'
// with bytes.IndexByte and then checks the run before them word by word,
// which is faster than specialBlocks' portable form on long strings.
const vectorSpecial = false
