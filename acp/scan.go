package acp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"strings"
	"unicode/utf8"
)

// maxNesting is the deepest nesting of arrays and objects accepted in a
// frame: the same limit as encoding/json, so both agree on every input.
const maxNesting = 10000

// errTooDeep reports arrays or objects nested deeper than maxNesting.
var errTooDeep = errors.New("arrays or objects nested too deeply")

// member is one name/value pair of a JSON object, in document order. key is
// the decoded name: a sub-slice of the scanned data unless the name holds
// escapes.
type member struct {
	key   []byte
	value []byte
}

// named reports whether the member's name equals name under Unicode case
// folding (as strings.EqualFold). name must be ASCII.
func (mb member) named(name string) bool {
	return equalFoldASCII(mb.key, name)
}

// equalFoldASCII is strings.EqualFold(string(b), name) for an ASCII name,
// without converting b when it is ASCII too.
func equalFoldASCII(b []byte, name string) bool {
	if len(b) != len(name) {
		// Only non-ASCII letters fold to ASCII ones (K, ſ), and they take
		// two bytes or more: a shorter b never matches, a longer one only
		// through them.
		if len(b) < len(name) {
			return false
		}
		for _, c := range b {
			if c >= utf8.RuneSelf {
				return strings.EqualFold(string(b), name)
			}
		}
		return false
	}
	for i, c := range b {
		d := name[i]
		if c == d {
			continue
		}
		if c >= utf8.RuneSelf {
			// Runes and bytes line up until here; let EqualFold decide.
			return strings.EqualFold(string(b), name)
		}
		if c|0x20 != d|0x20 || c|0x20 < 'a' || c|0x20 > 'z' {
			return false
		}
	}
	return true
}

// scanner validates one JSON text in a single pass and records the members
// of a top-level object. It accepts exactly what json.Valid accepts when the
// text is also valid UTF-8, except that with refuseCR a "\r" anywhere is an
// error: between tokens it could split the frame for a lenient reader.
type scanner struct {
	data     []byte
	refuseCR bool
	// nest holds one bit per open container below depth 64: 1 for an
	// array, 0 for an object. deep holds the bits of all open containers
	// once a frame nests deeper; it is allocated only then, so that the
	// common frame does not clear 1.2 KiB of bits.
	nest uint64
	deep *[maxNesting/64 + 1]uint64
}

// push records a container opened at depth (0-based): array or object.
func (s *scanner) push(depth int, array bool) {
	d := uint(depth)
	if d >= 64 && s.deep == nil {
		s.deep = new([maxNesting/64 + 1]uint64)
		s.deep[0] = s.nest
	}
	word, bit := &s.nest, uint64(1)<<(d%64)
	if s.deep != nil {
		word = &s.deep[d/64]
	}
	if array {
		*word |= bit
	} else {
		*word &^= bit
	}
}

// inArray reports whether the container open at depth (0-based) is an array.
func (s *scanner) inArray(depth int) bool {
	d := uint(depth)
	w := s.nest
	if s.deep != nil {
		w = s.deep[d/64]
	}
	return w&(uint64(1)<<(d%64)) != 0
}

// Scanner states: what the scanner expects next.
const (
	stValue    = iota // a value
	stKey             // an object member's name
	stEndValue        // what follows a complete value
)

// scanObject validates data as one JSON text and returns the members of
// its top-level object appended to members[:0], duplicates included, in
// document order. Keys and values are sub-slices of data (keys with escapes
// are decoded into new slices). A valid text that is not an object yields
// errNotObject.
func scanObject(data []byte, members []member, refuseCR bool) ([]member, error) {
	s := scanner{data: data, refuseCR: refuseCR}
	return s.run(members[:0])
}

// run scans s.data from its start.
func (s *scanner) run(members []member) ([]member, error) {
	data := s.data
	n := len(data)
	i, err := s.space(0)
	if err != nil {
		return members, err
	}
	topObject := i < n && data[i] == '{'
	depth := 0     // open containers
	valStart := -1 // start of the top-level member value being scanned
	state := stValue
	for {
		switch state {
		case stValue:
			if i >= n {
				return members, errInvalidJSON
			}
			switch c := data[i]; {
			case c == '{' || c == '[':
				if depth == maxNesting {
					return members, errTooDeep
				}
				s.push(depth, c == '[')
				depth++
				if i, err = s.space(i + 1); err != nil {
					return members, err
				}
				switch {
				case i < n && c == '{' && data[i] == '}', i < n && c == '[' && data[i] == ']':
					depth--
					i++
					state = stEndValue
				case c == '{':
					state = stKey
				}
			case c == '"':
				if i, _, err = s.str(i); err != nil {
					return members, err
				}
				state = stEndValue
			case c == '-' || c >= '0' && c <= '9':
				if i, err = s.number(i); err != nil {
					return members, err
				}
				state = stEndValue
			case c == 't':
				i, err = s.literal(i, "true")
				state = stEndValue
			case c == 'f':
				i, err = s.literal(i, "false")
				state = stEndValue
			case c == 'n':
				i, err = s.literal(i, "null")
				state = stEndValue
			default:
				return members, s.unexpected(c)
			}
			if err != nil {
				return members, err
			}

		case stKey:
			if i >= n || data[i] != '"' {
				return members, s.unexpectedAt(i)
			}
			kStart := i
			escaped := false
			if i, escaped, err = s.str(i); err != nil {
				return members, err
			}
			kEnd := i
			if i, err = s.space(i); err != nil {
				return members, err
			}
			if i >= n || data[i] != ':' {
				return members, s.unexpectedAt(i)
			}
			if i, err = s.space(i + 1); err != nil {
				return members, err
			}
			if depth == 1 {
				key := data[kStart+1 : kEnd-1]
				if escaped {
					dec, ok := decodeString(data[kStart:kEnd])
					if !ok {
						return members, errInvalidJSON
					}
					key = []byte(dec)
				}
				members = append(members, member{key: key})
				valStart = i
			}
			state = stValue

		case stEndValue:
			if depth == 0 {
				if i, err = s.space(i); err != nil {
					return members, err
				}
				if i != n {
					return members, s.unexpected(data[i])
				}
				if !topObject {
					return members[:0], errNotObject
				}
				return members, nil
			}
			if depth == 1 && valStart >= 0 {
				members[len(members)-1].value = data[valStart:i]
				valStart = -1
			}
			if i, err = s.space(i); err != nil {
				return members, err
			}
			if i >= n {
				return members, errInvalidJSON
			}
			inArray := s.inArray(depth - 1)
			switch c := data[i]; {
			case c == ',':
				if i, err = s.space(i + 1); err != nil {
					return members, err
				}
				if inArray {
					state = stValue
				} else {
					state = stKey
				}
			case inArray && c == ']', !inArray && c == '}':
				depth--
				i++
			default:
				return members, s.unexpected(c)
			}
		}
	}
}

// space skips JSON whitespace from i. With refuseCR a "\r" is an error.
func (s *scanner) space(i int) (int, error) {
	data := s.data
	for ; i < len(data); i++ {
		switch data[i] {
		case ' ', '\t', '\n':
		case '\r':
			if s.refuseCR {
				return i, errBareCR
			}
		default:
			return i, nil
		}
	}
	return i, nil
}

// unexpected classifies a byte that cannot appear where it was found.
func (s *scanner) unexpected(c byte) error {
	if c == '\r' && s.refuseCR {
		return errBareCR
	}
	return errInvalidJSON
}

// unexpectedAt is unexpected for the byte at i, or the end of the data.
func (s *scanner) unexpectedAt(i int) error {
	if i >= len(s.data) {
		return errInvalidJSON
	}
	return s.unexpected(s.data[i])
}

// literal checks that data[i:] starts with word (true, false or null).
func (s *scanner) literal(i int, word string) (int, error) {
	if len(s.data)-i < len(word) || string(s.data[i:i+len(word)]) != word {
		return i, errInvalidJSON
	}
	return i + len(word), nil
}

// number checks the number starting at data[i] against RFC 8259's grammar
// and returns the index just past it.
func (s *scanner) number(i int) (int, error) {
	data := s.data
	n := len(data)
	if data[i] == '-' {
		i++
	}
	switch {
	case i < n && data[i] == '0':
		i++
	case i < n && data[i] >= '1' && data[i] <= '9':
		i = digits(data, i+1)
	default:
		return i, errInvalidJSON
	}
	if i < n && data[i] == '.' {
		j := digits(data, i+1)
		if j == i+1 {
			return i, errInvalidJSON
		}
		i = j
	}
	if i < n && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < n && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(data, i)
		if j == i {
			return i, errInvalidJSON
		}
		i = j
	}
	return i, nil
}

// digits returns the index of the first non-digit at or after i.
func digits(data []byte, i int) int {
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		i++
	}
	return i
}

// SWAR constants: one in every byte, and every byte's high bit.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// specialBytes returns a word whose high bits are all clear exactly when
// all eight bytes of w (read little-endian) may appear unescaped in a JSON
// string and need no further look: ASCII, not a control character, not '"'
// and not '\\'. Otherwise its lowest set bit is the high bit of the first
// such byte: a borrow only ever runs from a flagged byte to higher ones.
func specialBytes(w uint64) uint64 {
	ctl := (w - 0x20*ones) &^ w      // high bit set where a byte < 0x20 (or >= 0x80)
	quote := (w ^ '"'*ones) - ones   // high bit set where a byte == '"' (and maybe above)
	quote &^= w ^ '"'*ones           // ... and never below the first '"'
	bslash := (w ^ '\\'*ones) - ones // the same for '\\'
	bslash &^= w ^ '\\'*ones
	return (ctl | quote | bslash | w) & highs // w's own high bits: non-ASCII bytes
}

// nextSpecial returns the index of the first byte at or after i that a
// string scan must look at ('"', '\\', a control character or a non-ASCII
// byte), or len(data) if there is none. It reads eight bytes at a time.
func nextSpecial(data []byte, i int) int {
	for ; i+8 <= len(data); i += 8 {
		if m := specialBytes(binary.LittleEndian.Uint64(data[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(data); i++ {
		if c := data[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return i
		}
	}
	return i
}

// probeWords is how many eight-byte words a string scan checks word by word
// before it looks for the next '"' or '\\' with bytes.IndexByte: short
// strings (names, ids) end within them, long ones go the vectorized way.
const probeWords = 2

// nextQuoteOrBackslash returns the index of the first '"' or '\\' at or
// after i, or len(data) if there is none.
func nextQuoteOrBackslash(data []byte, i int) int {
	end := len(data)
	if q := bytes.IndexByte(data[i:], '"'); q >= 0 {
		end = i + q
	}
	if b := bytes.IndexByte(data[i:end], '\\'); b >= 0 {
		end = i + b
	}
	return end
}

// controlOrHigh is a word whose high bits are all clear exactly when all
// eight bytes of w are ASCII and not control characters; otherwise its
// lowest set bit is the high bit of the first such byte (a borrow only runs
// from a byte below 0x20 to higher ones).
func controlOrHigh(w uint64) uint64 {
	return ((w - 0x20*ones) | w) & highs
}

// firstControlOrHigh returns the index of the first control character or
// non-ASCII byte in data[i:end], or end if there is none. It reads 64 bytes
// at a time from a slice the loop shrinks, so that the compiler proves
// every load in bounds.
func firstControlOrHigh(data []byte, i, end int) int {
	d := data[i:end]
	const c = 0x20 * ones
	for len(d) >= 64 {
		w0 := binary.LittleEndian.Uint64(d[0:8])
		w1 := binary.LittleEndian.Uint64(d[8:16])
		w2 := binary.LittleEndian.Uint64(d[16:24])
		w3 := binary.LittleEndian.Uint64(d[24:32])
		w4 := binary.LittleEndian.Uint64(d[32:40])
		w5 := binary.LittleEndian.Uint64(d[40:48])
		w6 := binary.LittleEndian.Uint64(d[48:56])
		w7 := binary.LittleEndian.Uint64(d[56:64])
		lo := (w0 - c) | (w1 - c) | (w2 - c) | (w3 - c) | w0 | w1 | w2 | w3
		hi := (w4 - c) | (w5 - c) | (w6 - c) | (w7 - c) | w4 | w5 | w6 | w7
		if (lo|hi)&highs != 0 {
			break
		}
		d = d[64:]
	}
	for len(d) >= 8 {
		if m := controlOrHigh(binary.LittleEndian.Uint64(d[:8])); m != 0 {
			return end - len(d) + bits.TrailingZeros64(m)/8
		}
		d = d[8:]
	}
	for k, b := range d {
		if b < 0x20 || b >= utf8.RuneSelf {
			return end - len(d) + k
		}
	}
	return end
}

// stringSpan finds the bytes a string scan must look at. It remembers the
// last '"' or '\\' it found, so a long string with many non-ASCII runes is
// still searched once: the work stays linear in the string's length.
type stringSpan struct {
	data []byte
	// stop is the index of a '"' or '\\' (or len(data)); no byte between
	// the position it was found from and stop is either.
	stop int
	// nonASCII is set once the vector search has stopped at a non-ASCII
	// byte of this string.
	nonASCII bool
}

// next is nextSpecial(s.data, i): the index of the first '"', '\\', control
// character or non-ASCII byte at or after i, or len(data).
func (s *stringSpan) next(i int) int {
	data := s.data
	if i >= s.stop {
		for k := 0; k < probeWords && i+8 <= len(data); k++ {
			if m := specialBytes(binary.LittleEndian.Uint64(data[i:])); m != 0 {
				return i + bits.TrailingZeros64(m)/8
			}
			i += 8
		}
		if i+8 > len(data) {
			return nextSpecial(data, i)
		}
		if vectorSpecial && !s.nonASCII {
			// One vector pass finds all four kinds of byte at once;
			// nextSpecial checks the tail shorter than a block. Once it
			// stops at a non-ASCII byte, the string is likely text with
			// many of them, and the search below, which finds the closing
			// quote once, costs less per rune run.
			j := nextSpecial(data, i+specialBlocks(data[i:]))
			s.nonASCII = j < len(data) && data[j] >= utf8.RuneSelf
			return j
		}
		s.stop = nextQuoteOrBackslash(data, i)
	}
	return firstControlOrHigh(data, i, s.stop)
}

// str checks the string starting with the '"' at data[i] and returns the
// index just past its closing quote, and whether it holds escapes.
func (s *scanner) str(i int) (end int, escaped bool, err error) {
	data := s.data
	n := len(data)
	// Fast path: a plain string of at most seven bytes (most names and
	// short values) ends within the first word.
	if i+9 <= n {
		if m := specialBytes(binary.LittleEndian.Uint64(data[i+1 : i+9])); m != 0 {
			if j := i + 1 + bits.TrailingZeros64(m)/8; data[j] == '"' {
				return j + 1, false, nil
			}
		}
	}
	span := stringSpan{data: data}
	for i++; ; {
		if i = span.next(i); i >= n {
			return i, escaped, errInvalidJSON
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= n {
				return i, escaped, errInvalidJSON
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if n-i < 6 || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) || !isHex(data[i+5]) {
					return i, escaped, errInvalidJSON
				}
				i += 6
			default:
				return i, escaped, errInvalidJSON
			}
		case c < 0x20:
			if c == '\r' && s.refuseCR {
				return i, escaped, errBareCR
			}
			return i, escaped, errInvalidJSON
		default: // a run of multi-byte runes, checked in place
			for i < n && data[i] >= utf8.RuneSelf {
				size := runeLen(data[i:])
				if size == 0 {
					return i, escaped, errBadUTF8
				}
				i += size
			}
		}
	}
}

// runeLen returns the length of the valid UTF-8 encoding of a non-ASCII
// rune at the start of p, or 0 if p does not start with one. It accepts
// exactly what utf8.DecodeRune decodes without error: no overlong forms,
// no surrogates, nothing above U+10FFFF.
func runeLen(p []byte) int {
	const lo, hi = 0x80, 0xBF // the continuation byte range
	c := p[0]
	switch {
	case c >= 0xC2 && c <= 0xDF:
		if len(p) >= 2 && p[1] >= lo && p[1] <= hi {
			return 2
		}
	case c >= 0xE0 && c <= 0xEF:
		second := [2]byte{lo, hi}
		switch c {
		case 0xE0:
			second[0] = 0xA0 // overlong below U+0800
		case 0xED:
			second[1] = 0x9F // surrogates U+D800..U+DFFF
		}
		if len(p) >= 3 && p[1] >= second[0] && p[1] <= second[1] && p[2] >= lo && p[2] <= hi {
			return 3
		}
	case c >= 0xF0 && c <= 0xF4:
		second := [2]byte{lo, hi}
		switch c {
		case 0xF0:
			second[0] = 0x90 // overlong below U+10000
		case 0xF4:
			second[1] = 0x8F // above U+10FFFF
		}
		if len(p) >= 4 && p[1] >= second[0] && p[1] <= second[1] &&
			p[2] >= lo && p[2] <= hi && p[3] >= lo && p[3] <= hi {
			return 4
		}
	}
	return 0
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
