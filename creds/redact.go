package creds

import (
	"cmp"
	"slices"
	"strings"
	"sync"
)

// Mask replaces every secret value in redacted text.
const Mask = "[REDACTED]"

// MinSecretLen is the shortest value a Redactor masks. Shorter values (such
// as "1" or "C") are not credentials and masking them would garble every
// log line.
const MinSecretLen = 4

// Redactor masks a set of secret values in text. Its zero value is ready
// to use and masks nothing; a nil *Redactor is valid too. It is safe for
// concurrent use.
type Redactor struct {
	mu       sync.RWMutex
	secrets  map[string]struct{}
	replacer *strings.Replacer
	gen      uint64
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
	values := make([]string, 0, len(r.secrets))
	for v := range r.secrets {
		values = append(values, v)
	}
	// Longest first, so a secret that contains another is masked whole.
	slices.SortFunc(values, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b))
	})
	pairs := make([]string, 0, 2*len(values))
	for _, v := range values {
		pairs = append(pairs, v, Mask)
	}
	r.replacer = strings.NewReplacer(pairs...)
	r.gen++
}

// Redact returns s with every registered secret replaced by Mask.
func (r *Redactor) Redact(s string) string {
	if r == nil {
		return s
	}
	r.mu.RLock()
	rep := r.replacer
	r.mu.RUnlock()
	if rep == nil || s == "" {
		return s
	}
	return rep.Replace(s)
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
