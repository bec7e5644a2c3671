package tools

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"unicode/utf8"
)

// readLine returns the next line of br without its line ending, keeping
// at most maxBytes of it (cut reports a longer line, whose rest is read and
// dropped). It returns io.EOF only when no bytes were left.
func readLine(br *bufio.Reader, maxBytes int, dst []byte) (line []byte, cut bool, err error) {
	dst = dst[:0]
	total := 0
	for {
		chunk, err := br.ReadSlice('\n')
		total += len(chunk)
		if room := maxBytes + 1 - len(dst); room > 0 {
			dst = append(dst, chunk[:min(room, len(chunk))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, false, err
		}
		if err != nil && total == 0 {
			return nil, false, io.EOF
		}
		content := total
		if err == nil {
			content-- // the newline
		}
		cut = content > maxBytes
		line = dst[:min(content, maxBytes, len(dst))]
		if !cut {
			line = bytes.TrimSuffix(line, []byte{'\r'})
		}
		return line, cut, nil
	}
}

// looksBinary reports whether a file's first bytes are not text: a NUL
// byte, or invalid UTF-8 other than a rune cut at the end of the sample.
func looksBinary(sample []byte) bool {
	if bytes.IndexByte(sample, 0) >= 0 {
		return true
	}
	for len(sample) > 0 {
		r, size := utf8.DecodeRune(sample)
		if r == utf8.RuneError && size == 1 {
			return len(sample) >= utf8.UTFMax || utf8.FullRune(sample)
		}
		sample = sample[size:]
	}
	return false
}
