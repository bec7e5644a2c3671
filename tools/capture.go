package tools

import (
	"strings"
	"unicode/utf8"
)

// cappedBuffer keeps the first limit bytes written to it and counts the
// rest without storing it, so a flood of output costs no memory.
type cappedBuffer struct {
	limit     int
	buf       []byte
	truncated bool
}

// Write keeps what fits and reports every byte as written, so the writer
// keeps draining the pipe.
func (b *cappedBuffer) Write(p []byte) (int, error) {
	room := b.limit - len(b.buf)
	if room > len(p) {
		room = len(p)
	}
	if room > 0 {
		b.buf = append(b.buf, p[:room]...)
	}
	if room < len(p) {
		b.truncated = true
	}
	return len(p), nil
}

// String returns the kept text (valid UTF-8), ending in TruncatedMarker when
// output was dropped; the whole stays within limit bytes.
func (b *cappedBuffer) String() string {
	if !b.truncated {
		return strings.ToValidUTF8(string(b.buf), "\uFFFD")
	}
	return truncateBytes(string(b.buf), b.limit)
}

// truncateBytes cuts s so that s plus "\n"+TruncatedMarker fits in limit
// bytes, on a rune boundary, and appends the marker.
func truncateBytes(s string, limit int) string {
	keep := max(limit-len(TruncatedMarker)-1, 0)
	if len(s) > keep {
		s = s[:keep]
		j := len(s) - 1
		for j > 0 && j > len(s)-utf8.UTFMax && !utf8.RuneStart(s[j]) {
			j--
		}
		if j >= 0 && !utf8.FullRuneInString(s[j:]) {
			s = s[:j]
		}
	}
	return strings.ToValidUTF8(s, "\uFFFD") + "\n" + TruncatedMarker
}

// truncateRunes keeps at most n characters of s, appending TruncatedMarker
// when it cut anything.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i < len(s) && count < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	return s[:i] + "\n" + TruncatedMarker
}
