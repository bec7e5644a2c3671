//go:build linux

package sidecarsock

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/podbot/podbot/errdefs"
)

// linkFixture is a sandbox's private directory with its link directory
// and a sidecar listening there, answering the handshake with key and
// echoing afterwards. accepted counts the connections it saw.
type linkFixture struct {
	parent, dir string
	key         []byte
	accepted    chan struct{}
}

func newLinkFixture(t *testing.T) *linkFixture {
	t.Helper()
	parent := t.TempDir()
	if err := os.Chmod(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	dir, key, err := Prepare(parent, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	got, err := TakeKey(dir)
	if err != nil || !bytes.Equal(got, key) {
		t.Fatalf("TakeKey = %x, %v; want the prepared key", got, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, KeyName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the key file is still there after TakeKey: %v", err)
	}
	f := &linkFixture{parent: parent, dir: dir, key: key, accepted: make(chan struct{}, 16)}
	f.serve(t, dir, key)
	return f
}

// serve listens in dir as the sidecar does.
func (f *linkFixture) serve(t *testing.T, dir string, key []byte) *net.UnixListener {
	t.Helper()
	l, err := Listen(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			f.accepted <- struct{}{}
			go func() {
				defer c.Close()
				if Server(c, key) == nil {
					io.Copy(c, c)
				}
			}()
		}
	}()
	return l
}

func dialCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestDialConnectsAndAuthenticates(t *testing.T) {
	f := newLinkFixture(t)
	c, err := Dial(dialCtx(t), f.dir, os.Getuid(), f.key)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping\n" {
		t.Fatalf("echo = %q, %v", buf, err)
	}
	if fi, err := os.Lstat(filepath.Join(f.dir, SocketName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode = %v, %v; want 0600", fi.Mode(), err)
	}
	hostKey, err := LoadKey(f.parent)
	if err != nil || !bytes.Equal(hostKey, f.key) {
		t.Fatalf("LoadKey = %x, %v", hostKey, err)
	}
}

func TestDialRefusesAWrongKey(t *testing.T) {
	f := newLinkFixture(t)
	other, _ := NewKey()
	_, err := Dial(dialCtx(t), f.dir, os.Getuid(), other)
	if !errors.Is(err, errdefs.ErrAuth) {
		t.Fatalf("err = %v, want ErrAuth", err)
	}
}

// A sidecar that never answers costs the dial no more than its context.
func TestDialBoundsASilentPeer(t *testing.T) {
	parent := t.TempDir()
	dir, key, err := Prepare(parent, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	l, err := Listen(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			defer c.Close()
			time.Sleep(5 * time.Second)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = Dial(ctx, dir, os.Getuid(), key)
	if err == nil || time.Since(start) > 3*time.Second {
		t.Fatalf("Dial = %v after %v; want a timeout near the context's", err, time.Since(start))
	}
}

func TestDialMissingSocketIsNotFound(t *testing.T) {
	dir, key, err := Prepare(t.TempDir(), os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(dialCtx(t), dir, os.Getuid(), key); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

// hostSocket is a socket outside any link directory, standing for a host
// service the sandbox would like podbot to connect to; it fails the test
// if anything connects.
func hostSocket(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "host.sock")
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err == nil {
			t.Errorf("the host socket %s was connected to", p)
			c.Close()
		}
	}()
	return p
}

// The sandbox owns the link directory and can put anything at the
// socket's name: podbot must neither follow, open for reading, nor wait on it.
func TestDialRefusesWhatTheSandboxPlants(t *testing.T) {
	cases := map[string]func(t *testing.T, p string){
		"symlink to a host socket": func(t *testing.T, p string) {
			if err := os.Symlink(hostSocket(t), p); err != nil {
				t.Fatal(err)
			}
		},
		"symlink to /etc/shadow": func(t *testing.T, p string) {
			if err := os.Symlink("/etc/shadow", p); err != nil {
				t.Fatal(err)
			}
		},
		"fifo": func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"huge regular file": func(t *testing.T, p string) {
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, 1<<40); err != nil {
				t.Fatal(err)
			}
		},
		"directory": func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			dir, key, err := Prepare(t.TempDir(), os.Getuid(), os.Getgid())
			if err != nil {
				t.Fatal(err)
			}
			plant(t, filepath.Join(dir, SocketName))
			start := time.Now()
			_, err = Dial(dialCtx(t), dir, os.Getuid(), key)
			if !errors.Is(err, errdefs.ErrRefused) {
				t.Fatalf("err = %v, want ErrRefused", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("the refusal took %v", d)
			}
		})
	}
}

func TestDialRefusesASocketOfAnotherOwner(t *testing.T) {
	f := newLinkFixture(t)
	// As the sandbox user we expect someone else: the socket (ours) is
	// then owned by the wrong user.
	other := os.Getuid() + 1
	if os.Getuid() == 0 {
		if err := os.Lchown(filepath.Join(f.dir, SocketName), 4242, 4242); err != nil {
			t.Fatal(err)
		}
		other = 0
	} else if err := os.Chmod(f.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Dial(dialCtx(t), f.dir, other, f.key)
	if !errors.Is(err, errdefs.ErrRefused) {
		t.Fatalf("err = %v, want ErrRefused", err)
	}
	if len(f.accepted) != 0 {
		t.Fatal("the socket was connected to")
	}
}

func TestDialRefusesAReplacedOrOpenDirectory(t *testing.T) {
	t.Run("link directory replaced by a symlink", func(t *testing.T) {
		f := newLinkFixture(t)
		moved := filepath.Join(t.TempDir(), "moved")
		if err := os.Rename(f.dir, moved); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(moved, f.dir); err != nil {
			t.Fatal(err)
		}
		_, err := Dial(dialCtx(t), f.dir, os.Getuid(), f.key)
		if !errors.Is(err, errdefs.ErrRefused) {
			t.Fatalf("err = %v, want ErrRefused", err)
		}
		if len(f.accepted) != 0 {
			t.Fatal("the socket behind the symlinked directory was connected to")
		}
	})
	t.Run("a parent is a symlink", func(t *testing.T) {
		f := newLinkFixture(t)
		alias := filepath.Join(t.TempDir(), "alias")
		if err := os.Symlink(f.parent, alias); err != nil {
			t.Fatal(err)
		}
		_, err := Dial(dialCtx(t), filepath.Join(alias, LinkDirName), os.Getuid(), f.key)
		if !errors.Is(err, errdefs.ErrRefused) {
			t.Fatalf("err = %v, want ErrRefused", err)
		}
	})
	t.Run("directory open to others", func(t *testing.T) {
		f := newLinkFixture(t)
		if err := os.Chmod(f.dir, 0o777); err != nil {
			t.Fatal(err)
		}
		_, err := Dial(dialCtx(t), f.dir, os.Getuid(), f.key)
		if !errors.Is(err, errdefs.ErrRefused) {
			t.Fatalf("err = %v, want ErrRefused", err)
		}
	})
	t.Run("relative or unclean path", func(t *testing.T) {
		for _, p := range []string{"sidecar", "/tmp/../tmp/x"} {
			if _, err := Dial(dialCtx(t), p, os.Getuid(), make([]byte, KeySize)); !errors.Is(err, errdefs.ErrInvalidValue) {
				t.Fatalf("Dial(%q) = %v, want ErrInvalidValue", p, err)
			}
		}
	})
}

func TestTakeKeyRefusesPlantedFiles(t *testing.T) {
	for name, plant := range map[string]func(p string) error{
		"symlink":   func(p string) error { return os.Symlink("/etc/passwd", p) },
		"fifo":      func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"too long":  func(p string) error { return os.WriteFile(p, make([]byte, KeySize+1), 0o600) },
		"too short": func(p string) error { return os.WriteFile(p, make([]byte, KeySize-1), 0o600) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := plant(filepath.Join(dir, KeyName)); err != nil {
				t.Fatal(err)
			}
			if _, err := TakeKey(dir); err == nil {
				t.Fatal("TakeKey accepted a planted key file")
			}
		})
	}
}

func TestPrepareRefusesANonDirectory(t *testing.T) {
	parent := t.TempDir()
	if err := os.Symlink(t.TempDir(), filepath.Join(parent, LinkDirName)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Prepare(parent, os.Getuid(), os.Getgid()); !errors.Is(err, errdefs.ErrRefused) {
		t.Fatalf("err = %v, want ErrRefused", err)
	}
}
