package acp

import "sync"

// maxAnswered bounds how many ids podbot remembers per peer for swallowing
// later cancel requests; the oldest are forgotten first.
const maxAnswered = 4096

// answeredIDs remembers the ids of requests podbot answered itself, per
// sending peer. It is safe for concurrent use.
type answeredIDs struct {
	mu    sync.Mutex
	peers [2]idRing
}

// idRing is a bounded set of id keys that forgets in insertion order.
type idRing struct {
	set   map[string]struct{}
	order []string
	next  int
}

// add remembers key as answered for requests from from.
func (a *answeredIDs) add(from peer, key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := &a.peers[from]
	if r.set == nil {
		r.set = make(map[string]struct{})
	}
	if _, ok := r.set[key]; ok {
		return
	}
	if len(r.order) < maxAnswered {
		r.order = append(r.order, key)
	} else {
		delete(r.set, r.order[r.next])
		r.order[r.next] = key
		r.next = (r.next + 1) % maxAnswered
	}
	r.set[key] = struct{}{}
}

// take reports whether key was answered, and forgets it.
func (a *answeredIDs) take(from peer, key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := &a.peers[from]
	if _, ok := r.set[key]; !ok {
		return false
	}
	delete(r.set, key) // its slot in order is reused in turn
	return true
}
