package creds

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Mask replaces every secret value in redacted text.
const Mask = "[REDACTED]"

// MinSecretLen is the shortest value a Redactor masks. Shorter values (such
// as "1" or "C") are not credentials and masking them would garble every
// log line.
const MinSecretLen = 4

// minLineLen is the shortest line of a multi-line secret (a PEM key) that
// is masked on its own.
const minLineLen = 8

// Redactor masks a set of secret values in text. Its zero value is ready
// to use and masks nothing; a nil *Redactor is valid too. It is safe for
// concurrent use.
//
// Each secret is masked as written and in the forms it takes elsewhere:
// trimmed of surrounding whitespace; escaped inside a JSON string (`\"`,
// `\\`, `\n`, `\/`, `\uXXXX` for non-ASCII or HTML characters, in the
// combinations common encoders produce); and, for a multi-line value such
// as a PEM private key, each of its lines of at least 8 bytes, so a key
// logged line by line is masked too. Matching is leftmost-longest.
type Redactor struct {
	mu      sync.RWMutex
	secrets map[string]struct{}
	m       *matcher
	gen     uint64
}

// NewRedactor returns a Redactor for the given values.
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// Add registers more secret values. Values shorter than MinSecretLen are
// ignored; a value with surrounding whitespace is also registered trimmed.
func (r *Redactor) Add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for _, s := range secrets {
		for _, v := range []string{s, strings.TrimSpace(s)} {
			if len(v) < MinSecretLen {
				continue
			}
			if _, ok := r.secrets[v]; ok {
				continue
			}
			if r.secrets == nil {
				r.secrets = map[string]struct{}{}
			}
			r.secrets[v] = struct{}{}
			changed = true
		}
	}
	if !changed {
		return
	}
	patterns := map[string]struct{}{}
	for v := range r.secrets {
		for _, form := range forms(v) {
			if len(form) >= MinSecretLen {
				patterns[form] = struct{}{}
			}
		}
	}
	r.m = newMatcher(patterns)
	r.gen++
}

// forms lists the ways secret v may appear in output.
func forms(v string) []string {
	out := jsonForms(v)
	if strings.ContainsAny(v, "\r\n") {
		for _, line := range strings.FieldsFunc(v, func(c rune) bool { return c == '\n' || c == '\r' }) {
			if line = strings.TrimSpace(line); len(line) >= minLineLen {
				out = append(out, jsonForms(line)...)
			}
		}
	}
	return out
}

// jsonForms lists v and v escaped inside a JSON string by common encoders:
// HTML characters escaped or not, '/' escaped or not, non-ASCII kept or
// written as \uXXXX in lower or upper case hex.
func jsonForms(v string) []string {
	out := []string{v}
	for opts := range 16 {
		e := jsonEscape(v, opts&1 != 0, opts&2 != 0, opts&4 != 0, opts&8 != 0)
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// jsonEscape writes v as the inside of a JSON string.
func jsonEscape(v string, html, slash, ascii, upper bool) string {
	hex := "\\u%04x"
	if upper {
		hex = "\\u%04X"
	}
	var b strings.Builder
	for _, c := range v {
		switch {
		case c == '"':
			b.WriteString(`\"`)
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '/' && slash:
			b.WriteString(`\/`)
		case c < 0x20, html && (c == '<' || c == '>' || c == '&'), (html || ascii) && (c == '\u2028' || c == '\u2029'):
			fmt.Fprintf(&b, hex, c)
		case c >= utf8.RuneSelf && ascii:
			if c > 0xFFFF {
				hi, lo := utf16Surrogates(c)
				fmt.Fprintf(&b, hex+hex, hi, lo)
			} else {
				fmt.Fprintf(&b, hex, c)
			}
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

func utf16Surrogates(c rune) (rune, rune) {
	c -= 0x10000
	return 0xD800 + (c>>10)&0x3FF, 0xDC00 + c&0x3FF
}

// Redact returns s with every registered secret replaced by Mask.
func (r *Redactor) Redact(s string) string {
	m := r.matcher()
	if m == nil || s == "" {
		return s
	}
	out, _ := m.redact(nil, s, true)
	if out == nil {
		return s
	}
	return string(out)
}

// matcher returns the current matcher; nil masks nothing.
func (r *Redactor) matcher() *matcher {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.m
}

// Len reports how many secret values are registered.
func (r *Redactor) Len() int {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.secrets)
}

// generation changes whenever the set of secrets changes.
func (r *Redactor) generation() uint64 {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.gen
}

// matcher finds patterns leftmost-longest: at each position the longest
// pattern that matches there wins, and scanning resumes after it.
type matcher struct {
	first  [256]bool
	byByte [256][]string // patterns by first byte, longest first
	maxLen int
}

func newMatcher(patterns map[string]struct{}) *matcher {
	m := &matcher{}
	for p := range patterns {
		c := p[0]
		m.first[c] = true
		m.byByte[c] = append(m.byByte[c], p)
		m.maxLen = max(m.maxLen, len(p))
	}
	for i := range m.byByte {
		slices.SortFunc(m.byByte[i], func(a, b string) int {
			return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b))
		})
	}
	return m
}

// redact appends s, masked, to dst. When final is false, s is a prefix of
// a longer stream: scanning stops at the first position where a pattern
// could still match once more bytes arrive, and held reports how many
// bytes at the end of s were not consumed (always fewer than the longest
// pattern). It returns a nil dst when s was consumed whole with nothing
// masked and dst was nil.
func (m *matcher) redact(dst []byte, s string, final bool) (out []byte, held int) {
	copied := 0 // s[:copied] is in dst already
	for i := 0; i < len(s); {
		if !m.first[s[i]] {
			i++
			continue
		}
		match, wait := 0, false
		for _, p := range m.byByte[s[i]] {
			if len(p) <= len(s)-i {
				if s[i:i+len(p)] == p {
					match = len(p)
					break
				}
			} else if !final && strings.HasPrefix(p, s[i:]) {
				wait = true // a longer pattern may still match here
				break
			}
		}
		if wait {
			dst = append(dst, s[copied:i]...)
			return dst, len(s) - i
		}
		if match == 0 {
			i++
			continue
		}
		dst = append(dst, s[copied:i]...)
		dst = append(dst, Mask...)
		i += match
		copied = i
	}
	if copied == 0 && dst == nil {
		return nil, 0
	}
	return append(dst, s[copied:]...), 0
}
