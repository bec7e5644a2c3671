package termsafe

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// String returns s with every character a terminal could act on replaced
// by a visible escape: C0 controls other than newline and tab (ESC becomes
// \x1b), DEL, C1 controls (U+0080-U+009F), bidirectional embeddings,
// overrides and isolates (U+202A-U+202E, U+2066-U+2069), the line and
// paragraph separators, and each byte of invalid UTF-8 (\xNN). Printable
// text, newlines and tabs pass unchanged.
func String(s string) string {
	if safe(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case dangerous(r):
			if r < 0x100 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Line is String for text that must stay on one line (a file name, a ref,
// a label): newlines and tabs are escaped too.
func Line(s string) string {
	return strings.NewReplacer("\n", `\n`, "\t", `\t`, "\r", `\r`).Replace(String(s))
}

// safe reports whether s needs no change, without allocating.
func safe(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || dangerous(r) {
			return false
		}
		i += size
	}
	return true
}

// dangerous reports whether a terminal could act on r or it reorders text.
func dangerous(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x2028, r == 0x2029:
		return true
	}
	return false
}
