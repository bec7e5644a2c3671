package sidecarsock

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestHandshakeBothDirections(t *testing.T) {
	key, _ := NewKey()
	other, _ := NewKey()
	for _, tc := range []struct {
		name                 string
		client, server       []byte
		wantClient, wantServ bool
	}{
		{"same key", key, key, true, true},
		{"impostor sidecar", key, other, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			serr := make(chan error, 1)
			go func() { serr <- Server(b, tc.server) }()
			cerr := Client(a, tc.client, time.Now().Add(time.Second))
			if !tc.wantClient {
				a.Close() // an impostor's server waits for a proof that never comes
			}
			if (cerr == nil) != tc.wantClient {
				t.Fatalf("client: %v", cerr)
			}
			if err := <-serr; (err == nil) != tc.wantServ {
				t.Fatalf("server: %v", err)
			}
			if !tc.wantClient && !errors.Is(cerr, ErrAuth) {
				t.Fatalf("client error %v does not match ErrAuth", cerr)
			}
		})
	}
}

// socketPair returns two connected unix stream sockets (buffered, unlike
// net.Pipe, so a writer does not wait for the reader).
func socketPair(t *testing.T) (a, b *net.UnixConn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "pair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}

// FuzzServerHandshake feeds arbitrary bytes to the sidecar's end: it must
// never accept a peer that does not hold the key, nor panic.
func FuzzServerHandshake(f *testing.F) {
	f.Add([]byte("podbotL1"))
	f.Add(append([]byte("podbotL1"), make([]byte, 64)...))
	f.Add([]byte{})
	key := make([]byte, KeySize)
	f.Fuzz(func(t *testing.T, in []byte) {
		a, b := socketPair(t)
		defer a.Close()
		defer b.Close()
		go func() {
			a.Write(in)
			a.CloseWrite()
		}()
		if err := Server(b, key); err == nil {
			t.Fatalf("the server accepted %x", in)
		}
	})
}
