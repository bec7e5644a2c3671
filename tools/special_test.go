//go:build unix

package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mkfifo makes a FIFO at rel in the workspace; at the end of the test it
// is opened for writing once, which releases a reader blocked in open.
func mkfifo(t *testing.T, ws *Workspace, rel string) {
	t.Helper()
	p := filepath.Join(ws.Dir(), rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
}

// promptly runs call and fails the test if it does not return in time.
func promptly(t *testing.T, what string, call func(ctx context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- call(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not return: it blocked opening a special file", what)
		return nil
	}
}

// TestToolsRefuseFIFO plays an agent that made a FIFO and asks the tools
// to read, edit or search it: every call returns at once with an error
// naming the path and its type, instead of blocking forever.
func TestToolsRefuseFIFO(t *testing.T) {
	ws := newTestWorkspace(t)
	mkfifo(t, ws, "pipe")
	mkfifo(t, ws, "dir/pipe.txt")
	writeHostFile(t, ws, "dir/ok.txt", "needle\n")

	calls := map[string]func(ctx context.Context) error{
		"read_file": func(ctx context.Context) error {
			_, err := ws.ReadFile(ctx, ReadFileParams{FilePath: "pipe"})
			return err
		},
		"edit_file": func(ctx context.Context) error {
			_, err := ws.EditFile(ctx, EditFileParams{FilePath: "pipe", OldString: "a", NewString: "b"})
			return err
		},
		"write_file": func(ctx context.Context) error {
			_, err := ws.WriteFile(ctx, WriteFileParams{FilePath: "pipe", Content: "x"})
			return err
		},
		"grep_file": func(ctx context.Context) error {
			_, err := ws.Grep(ctx, GrepParams{Pattern: "needle", Path: "pipe"})
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := promptly(t, name, call)
			if err == nil {
				t.Fatalf("%s on a FIFO succeeded", name)
			}
			if name != "write_file" && name != "grep_file" && (!strings.Contains(err.Error(), "pipe") || !strings.Contains(err.Error(), "fifo")) {
				t.Errorf("error %q does not name the path and its type", err)
			}
		})
	}
	t.Run("grep_dir", func(t *testing.T) {
		var res GrepResult
		err := promptly(t, "grep", func(ctx context.Context) error {
			var err error
			res, err = ws.Grep(ctx, GrepParams{Pattern: "needle", Path: "dir"})
			return err
		})
		if err != nil || len(res.Matches) != 1 {
			t.Fatalf("grep over a directory with a FIFO: %+v, %v", res, err)
		}
	})
	t.Run("glob", func(t *testing.T) {
		err := promptly(t, "glob", func(ctx context.Context) error {
			_, err := ws.Glob(ctx, GlobParams{Pattern: "**"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ls", func(t *testing.T) {
		err := promptly(t, "ls", func(ctx context.Context) error {
			_, err := ws.Ls(ctx, LsParams{Path: "pipe"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestToolsRefuseDevices plays an agent with a device node in its
// workspace (made here with mknod, as root), and one with a symlink to a
// host device, which must already be refused as leaving the workspace.
func TestToolsRefuseDevices(t *testing.T) {
	ws := newTestWorkspace(t)
	if err := os.Symlink("/dev/zero", filepath.Join(ws.Dir(), "zero-link")); err != nil {
		t.Fatal(err)
	}
	names := []string{"zero-link"}
	if os.Geteuid() == 0 {
		// 1:5 is /dev/zero, 1:3 /dev/null on Linux.
		for _, d := range []struct {
			name string
			dev  int
		}{{"zero", 1<<8 | 5}, {"null", 1<<8 | 3}} {
			if err := syscall.Mknod(filepath.Join(ws.Dir(), d.name), syscall.S_IFCHR|0o666, d.dev); err != nil {
				t.Logf("mknod %s: %v", d.name, err)
				continue
			}
			names = append(names, d.name)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			err := promptly(t, "read_file", func(ctx context.Context) error {
				_, err := ws.ReadFile(ctx, ReadFileParams{FilePath: name})
				return err
			})
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Fatalf("read_file on %s: %v, want an error naming it", name, err)
			}
			if name != "zero-link" && !strings.Contains(err.Error(), "device") {
				t.Errorf("error %q does not name the type", err)
			}
			err = promptly(t, "edit_file", func(ctx context.Context) error {
				_, err := ws.EditFile(ctx, EditFileParams{FilePath: name, OldString: "a", NewString: "b"})
				return err
			})
			if err == nil {
				t.Fatalf("edit_file on %s succeeded", name)
			}
		})
	}
}
