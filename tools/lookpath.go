package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// pathCache resolves bare command names against the process's PATH and
// remembers a resolution only when nothing can change it while the
// process runs: every PATH directory searched up to the hit, and each of
// their ancestors, is on a read-only mount (a sandbox's read-only root).
// Then no file can appear earlier in PATH and the hit cannot be removed,
// so a cached answer is the answer exec.LookPath would give. Anything
// else (a writable directory such as /workspace or a host's /usr/bin, a
// relative entry, a miss) is looked up afresh on every call. The cache
// saves one stat per PATH entry on every shell_execute in a sandbox.
type pathCache struct {
	// readOnly reports whether dir is on a read-only mount; nil means
	// mountReadOnly. Tests replace it.
	readOnly func(dir string) bool

	mu   sync.Mutex
	path string            // the PATH hits were resolved against
	hits map[string]string // bare name -> absolute path
	ro   map[string]bool   // directory -> read-only, as checked once
}

// lookPath resolves name as exec.LookPath does.
func (c *pathCache) lookPath(name string) (string, error) {
	path := os.Getenv("PATH")
	c.mu.Lock()
	if c.path != path || c.hits == nil {
		c.path, c.hits, c.ro = path, map[string]string{}, map[string]bool{}
	}
	hit, ok := c.hits[name]
	c.mu.Unlock()
	if ok {
		return hit, nil
	}
	found, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.path == path && c.immutable(path, filepath.Dir(found)) {
		c.hits[name] = found
	}
	return found, nil
}

// immutable reports whether every entry of path up to and including dir
// is absolute and read-only, ancestors included. Called with mu held.
func (c *pathCache) immutable(path, dir string) bool {
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			return false
		}
		d = filepath.Clean(d)
		for a := d; ; a = filepath.Dir(a) {
			if !c.readOnlyDir(a) {
				return false
			}
			if a == filepath.Dir(a) {
				break
			}
		}
		if d == dir {
			return true
		}
	}
	return false
}

func (c *pathCache) readOnlyDir(dir string) bool {
	ro, ok := c.ro[dir]
	if !ok {
		check := c.readOnly
		if check == nil {
			check = mountReadOnly
		}
		ro = check(dir)
		c.ro[dir] = ro
	}
	return ro
}
