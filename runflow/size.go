package runflow

import "github.com/podbot/podbot/engine"

// offerSize puts sz in the one-slot channel ch, dropping a stale size the
// receiver has not taken yet.
func offerSize(ch chan engine.Size, sz engine.Size) {
	select {
	case <-ch:
	default:
	}
	select {
	case ch <- sz:
	default:
	}
}
