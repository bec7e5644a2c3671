package sidecarsock

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/podbot/podbot/errdefs"
)

// Names in a link directory.
const (
	// SocketName is the sidecar's listening socket.
	SocketName = "tools.sock"
	// KeyName is the key file podbot writes before the sandbox starts;
	// the sidecar reads and removes it.
	KeyName = "key"
)

// Names in a sandbox's private host directory (the parent of its link
// directory, which the sandbox never sees).
const (
	// LinkDirName is the link directory, bind-mounted into the sandbox.
	LinkDirName = "sidecar"
	// HostKeyName is podbot's copy of the link key, beside the link
	// directory and never mounted.
	HostKeyName = "sidecar.key"
)

// Target is where a sandbox sees its link directory.
const Target = "/run/podbot-sidecar"

// KeySize is the size of a link key in bytes.
const KeySize = 32

// HandshakeTimeout bounds the handshake on either end (the host's end
// less, when its context ends sooner).
const HandshakeTimeout = 5 * time.Second

// magic opens every connection; it names the handshake's version.
var magic = [8]byte{'p', 'o', 'd', 'b', 'o', 't', 'L', '1'}

const nonceSize = 32

// ErrAuth means the other end did not prove it holds the sandbox's key.
var ErrAuth = errors.New("the other end of the sidecar socket did not prove it holds this sandbox's key")

// NewKey returns a fresh random link key.
func NewKey() ([]byte, error) {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	return k, nil
}

// proof is the MAC one end sends: role separates the two directions, so
// neither end's proof can be replayed as the other's.
func proof(key []byte, role string, hostNonce, sidecarNonce []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(role))
	m.Write([]byte{0})
	m.Write(hostNonce)
	m.Write(sidecarNonce)
	return m.Sum(nil)
}

const (
	roleSidecar = "podbot sidecar"
	roleHost    = "podbot host"
)

// Client runs the host's side of the handshake on c: it sends a nonce,
// checks the sidecar's proof over it and sends its own. Every read is of a
// fixed size and under deadline (at most HandshakeTimeout away), so a
// silent or chatty peer costs no more than that and a few dozen bytes.
// Nothing but MCP frames follow.
func Client(c net.Conn, key []byte, deadline time.Time) error {
	if len(key) != KeySize {
		return fmt.Errorf("sidecar socket: the link key has %d bytes, want %d", len(key), KeySize)
	}
	if limit := time.Now().Add(HandshakeTimeout); deadline.IsZero() || deadline.After(limit) {
		deadline = limit
	}
	if err := c.SetDeadline(deadline); err != nil {
		return err
	}
	hn := make([]byte, nonceSize)
	if _, err := rand.Read(hn); err != nil {
		return err
	}
	hello := append(magic[:len(magic):len(magic)], hn...)
	if _, err := c.Write(hello); err != nil {
		return fmt.Errorf("sidecar socket: send hello: %w", err)
	}
	var reply [nonceSize + sha256.Size]byte
	if _, err := io.ReadFull(c, reply[:]); err != nil {
		return fmt.Errorf("sidecar socket: read the sidecar's proof: %w", err)
	}
	sn, got := reply[:nonceSize], reply[nonceSize:]
	if !hmac.Equal(got, proof(key, roleSidecar, hn, sn)) {
		return ErrAuth
	}
	if _, err := c.Write(proof(key, roleHost, hn, sn)); err != nil {
		return fmt.Errorf("sidecar socket: send proof: %w", err)
	}
	return c.SetDeadline(time.Time{})
}

// Server runs the sidecar's side of the handshake on c: it answers the
// host's hello with a nonce and its proof, then checks the host's.
func Server(c net.Conn, key []byte) error {
	if len(key) != KeySize {
		return fmt.Errorf("sidecar socket: the link key has %d bytes, want %d", len(key), KeySize)
	}
	if err := c.SetDeadline(time.Now().Add(HandshakeTimeout)); err != nil {
		return err
	}
	var hello [len(magic) + nonceSize]byte
	if _, err := io.ReadFull(c, hello[:]); err != nil {
		return fmt.Errorf("sidecar socket: read hello: %w", err)
	}
	if [8]byte(hello[:len(magic)]) != magic {
		return fmt.Errorf("sidecar socket: not a podbot hello: %w", ErrAuth)
	}
	hn := hello[len(magic):]
	sn := make([]byte, nonceSize)
	if _, err := rand.Read(sn); err != nil {
		return err
	}
	if _, err := c.Write(append(sn, proof(key, roleSidecar, hn, sn)...)); err != nil {
		return fmt.Errorf("sidecar socket: send proof: %w", err)
	}
	var got [sha256.Size]byte
	if _, err := io.ReadFull(c, got[:]); err != nil {
		return fmt.Errorf("sidecar socket: read the host's proof: %w", err)
	}
	if !hmac.Equal(got[:], proof(key, roleHost, hn, sn)) {
		return ErrAuth
	}
	return c.SetDeadline(time.Time{})
}

func fsErr(op, path string, reason error, msg string, err error) error {
	return &errdefs.FilesystemError{Op: op, Path: path, Reason: reason, Msg: msg, Err: err}
}
