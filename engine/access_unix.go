//go:build unix

package engine

import "golang.org/x/sys/unix"

// accessRW reports whether this process may read and write path.
func accessRW(path string) error { return unix.Access(path, unix.R_OK|unix.W_OK) }
