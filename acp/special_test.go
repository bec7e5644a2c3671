package acp

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// specialBlocksRef is specialBlocks' definition: the first special byte
// within p's whole 16-byte blocks, or their length.
func specialBlocksRef(p []byte) int {
	n := len(p) &^ 15
	for i := 0; i < n; i++ {
		if c := p[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return i
		}
	}
	return n
}

// TestSpecialBlocks puts every byte value at every position of plain
// strings of every length up to 80 (so both the two-block and the
// one-block steps and the tail are crossed), alone and after a second
// special byte, and compares with the byte-by-byte definition.
func TestSpecialBlocks(t *testing.T) {
	for n := 0; n <= 80; n++ {
		plain := bytes.Repeat([]byte("a"), n)
		if got, want := specialBlocks(plain), specialBlocksRef(plain); got != want {
			t.Fatalf("len %d, plain: got %d, want %d", n, got, want)
		}
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				p := bytes.Clone(plain)
				p[pos] = byte(c)
				if got, want := specialBlocks(p), specialBlocksRef(p); got != want {
					t.Fatalf("len %d, byte %#x at %d: got %d, want %d", n, c, pos, got, want)
				}
				if pos+1 < n {
					p[pos+1] = '"'
					if got, want := specialBlocks(p), specialBlocksRef(p); got != want {
						t.Fatalf("len %d, byte %#x at %d then '\"': got %d, want %d", n, c, pos, got, want)
					}
				}
			}
		}
	}
}

// TestSpecialBlocksUnaligned runs on slices that start at every offset
// of a larger buffer, so loads are unaligned, with random contents.
func TestSpecialBlocksUnaligned(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 4096)
	for round := 0; round < 2000; round++ {
		for i := range buf {
			buf[i] = byte(0x20 + r.IntN(0x5f)) // printable ASCII
		}
		for k := r.IntN(3); k > 0; k-- {
			buf[r.IntN(len(buf))] = byte(r.IntN(256))
		}
		off := r.IntN(64)
		p := buf[off : off+r.IntN(len(buf)-off)]
		if got, want := specialBlocks(p), specialBlocksRef(p); got != want {
			t.Fatalf("round %d: got %d, want %d", round, got, want)
		}
	}
}

func FuzzSpecialBlocks(f *testing.F) {
	f.Add([]byte(`plain ascii text that runs past two blocks of sixteen bytes "`))
	f.Add([]byte("0123456789abcdef0123456789abcde\x1f"))
	f.Add([]byte("0123456789abcdef\\0123456789abcdef"))
	f.Add([]byte("\u00e9\u4e2d0123456789abcdef0123456789abcdef"))
	f.Fuzz(func(t *testing.T, p []byte) {
		if got, want := specialBlocks(p), specialBlocksRef(p); got != want {
			t.Fatalf("specialBlocks(%q) = %d, want %d", p, got, want)
		}
	})
}
