//go:build !unix

package pool

import "os"

// openNoFollow opens path for reading.
func openNoFollow(path string) (*os.File, error) { return os.Open(path) }
