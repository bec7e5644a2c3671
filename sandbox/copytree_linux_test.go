package sandbox

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCopyTreeRacingSwap plays an agent that, while its workspace is
// cloned, keeps exchanging a directory with a symlink to a host directory
// (renameat2 RENAME_EXCHANGE, atomic): over many clones, none holds a file
// from outside.
func TestCopyTreeRacingSwap(t *testing.T) {
	src, outside, _ := cloneSources(t)
	if err := os.Symlink(outside, filepath.Join(src, "alt")); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a, b := filepath.Join(src, "sub"), filepath.Join(src, "alt")
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("renameat2: %v", err)
				return
			}
		}
	}()
	for i := 0; i < 300; i++ {
		dst := filepath.Join(t.TempDir(), "clone")
		if err := os.Mkdir(dst, 0o700); err != nil {
			t.Fatal(err)
		}
		_ = copyTree(src, dst, 1<<20)
		assertNoOutside(t, dst)
		if t.Failed() {
			break
		}
	}
	close(stop)
	wg.Wait()
}
