package runflow

import (
	"sync"

	"golang.org/x/term"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
)

// fdOf returns the file descriptor behind v, if it has one.
func fdOf(v any) (int, bool) {
	if f, ok := v.(interface{ Fd() uintptr }); ok {
		return int(f.Fd()), true
	}
	return 0, false
}

// IsTerminal reports whether v (an *os.File or anything with an Fd method)
// is a terminal.
func IsTerminal(v any) bool {
	fd, ok := fdOf(v)
	return ok && term.IsTerminal(fd)
}

// MakeRaw puts the terminal behind in into raw mode and returns a function
// that restores the previous state; the function is safe to call any number
// of times and restores only once. When in is not a terminal nothing
// changes and the function does nothing.
func MakeRaw(in any) (restore func(), err error) {
	fd, ok := fdOf(in)
	if !ok || !term.IsTerminal(fd) {
		return func() {}, nil
	}
	state, err := term.MakeRaw(fd)
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "set raw mode", Path: "stdin", Err: err}
	}
	return sync.OnceFunc(func() { _ = term.Restore(fd, state) }), nil
}

// Size reads the size of the terminal behind out; ok is false when out is
// not a terminal or reports no size.
func Size(out any) (engine.Size, bool) {
	fd, ok := fdOf(out)
	if !ok {
		return engine.Size{}, false
	}
	w, h, err := term.GetSize(fd)
	if err != nil || w <= 0 || h <= 0 {
		return engine.Size{}, false
	}
	return engine.Size{Height: uint(h), Width: uint(w)}, true
}
