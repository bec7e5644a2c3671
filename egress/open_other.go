//go:build !unix

package egress

// oNoFollow is not available here; the file type is checked after opening.
const oNoFollow = 0
