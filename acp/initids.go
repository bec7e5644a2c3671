package acp

import (
	"strconv"
	"sync"
	"sync/atomic"
)

// maxInitIDs bounds how many distinct initialize request ids podbot
// remembers per connection. An initialize beyond them is refused rather
// than one forgotten, so no response to a remembered id goes unmasked.
const maxInitIDs = 8

// initIDs remembers the ids of the client's initialize requests, as
// canonical keys (see canonicalID), for the life of the connection: every
// agent response with one of these ids is an initialize response, however
// many times the agent sends it. The client's pump adds; the agent's pump
// reads a snapshot with one atomic load and no lock.
type initIDs struct {
	mu   sync.Mutex // serializes writers
	keys atomic.Pointer[[]string]
}

// add remembers the id raw. It reports false, remembering nothing, when
// raw is new and maxInitIDs ids are already remembered.
func (s *initIDs) add(raw []byte) bool {
	key := string(canonicalID(raw))
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	if p := s.keys.Load(); p != nil {
		keys = *p
	}
	for _, k := range keys {
		if k == key {
			return true
		}
	}
	if len(keys) >= maxInitIDs {
		return false
	}
	next := append(append(make([]string, 0, len(keys)+1), keys...), key)
	s.keys.Store(&next)
	return true
}

// match reports whether raw, the id of an agent's response, names a
// remembered initialize request. It does not allocate for the ids clients
// use in practice (integers and strings without escapes).
func (s *initIDs) match(raw []byte) bool {
	p := s.keys.Load()
	if p == nil {
		return false
	}
	key := canonicalID(raw)
	for _, k := range *p {
		if string(key) == k {
			return true
		}
	}
	return false
}

// canonicalID maps a JSON-RPC id to a key that is equal for every spelling
// a receiver could take for the same id: a string by its decoded content,
// a number by its float64 value (as JavaScript reads it: 1, 1.0 and 1e0
// are one id, and -0 is 0). A string and a number with the same text share
// a key: matching more ids than a receiver would only masks more.
func canonicalID(raw []byte) []byte {
	if len(raw) == 0 {
		return raw
	}
	switch c := raw[0]; {
	case c == '"':
		if s, ok := stringContent(raw); ok {
			return s
		}
		return raw
	case c == '-' || c >= '0' && c <= '9':
		if plainInteger(raw) {
			return raw
		}
		f, _ := strconv.ParseFloat(string(raw), 64) // out of range: ±Inf or 0, as JavaScript reads it
		return strconv.AppendFloat(nil, f+0, 'f', -1, 64)
	}
	return raw
}

// plainInteger reports whether raw is an integer written the way
// strconv.FormatFloat writes it: no leading zeros, no "-0", and few enough
// digits (15) that a float64 holds it exactly.
func plainInteger(raw []byte) bool {
	digits := raw
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || digits[0] == '0' && (len(digits) > 1 || len(raw) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
