package github

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podbot/podbot/errdefs"
)

// testRSAKey is generated once per test binary: RSA generation is slow.
var testRSAKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

func pemBytes(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadPrivateKeyAccepts(t *testing.T) {
	key := testRSAKey()
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tests := []struct {
		name string
		data []byte
	}{
		{"pkcs1", pemBytes("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key))},
		{"pkcs8", pemBytes("PRIVATE KEY", pkcs8)},
		{"pkcs1 with surrounding text", append([]byte("comment line\n"), pemBytes("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key))...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, dir, strings.ReplaceAll(tt.name, " ", "_")+".pem", tt.data)
			got, raw, err := LoadPrivateKey(p)
			if err != nil {
				t.Fatalf("LoadPrivateKey: %v", err)
			}
			if !got.Equal(key) {
				t.Fatal("loaded key differs from the written key")
			}
			block, _ := pem.Decode(raw)
			if block == nil {
				t.Fatal("returned PEM bytes do not decode")
			}
		})
	}
}

func TestLoadPrivateKeyRejects(t *testing.T) {
	rsaKey := testRSAKey()
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecPKCS8, err := x509.MarshalPKCS8PrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	ecSEC1, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edPKCS8, err := x509.MarshalPKCS8PrivateKey(edKey)
	if err != nil {
		t.Fatal(err)
	}
	pubPKIX, err := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	//nolint:staticcheck // legacy PEM encryption is what old tools produce; the test needs one
	encrypted, err := x509.EncryptPEMBlock(rand.Reader, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey), []byte("passphrase"), x509.PEMCipherAES256)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "podbot test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	certDER, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &rsaKey.PublicKey, rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	// An OpenSSH private key container: the magic, then cipher "none".
	openssh := append([]byte("openssh-key-v1\x00"), 0, 0, 0, 4, 'n', 'o', 'n', 'e')
	pkcs1 := pemBytes("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey))

	dir := t.TempDir()
	notDirParent := writeFile(t, dir, "plainfile", []byte("x"))

	type tc struct {
		name   string
		data   []byte // written to <dir>/<name>.pem unless path is set
		path   string
		reason error
		want   string
	}
	tests := []tc{
		{name: "missing file", path: filepath.Join(dir, "nope.pem"), reason: errdefs.ErrNotFound, want: "does not exist"},
		{name: "parent not a directory", path: filepath.Join(notDirParent, "key.pem"), reason: errdefs.ErrNotFound, want: "parent of the path is not a directory"},
		{name: "directory", path: dir, reason: errdefs.ErrInvalidKey, want: "is a directory"},
		{name: "empty", data: nil, reason: errdefs.ErrInvalidKey, want: "is empty"},
		{name: "whitespace only", data: []byte(" \n\t\n"), reason: errdefs.ErrInvalidKey, want: "is empty"},
		{name: "too large", data: make([]byte, MaxKeyFileSize+1), reason: errdefs.ErrInvalidKey, want: "too large"},
		{name: "encrypted pkcs1", data: pem.EncodeToMemory(encrypted), reason: errdefs.ErrInvalidKey, want: "encrypted with a passphrase"},
		{name: "encrypted pkcs8", data: pemBytes("ENCRYPTED PRIVATE KEY", []byte{0x30, 0x00}), reason: errdefs.ErrInvalidKey, want: "encrypted with a passphrase"},
		{name: "public key pkix", data: pemBytes("PUBLIC KEY", pubPKIX), reason: errdefs.ErrInvalidKey, want: "holds a public key"},
		{name: "public key pkcs1", data: pemBytes("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&rsaKey.PublicKey)), reason: errdefs.ErrInvalidKey, want: "holds a public key"},
		{name: "openssh public key", data: []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample user@host\n"), reason: errdefs.ErrInvalidKey, want: "OpenSSH public key"},
		{name: "certificate", data: pemBytes("CERTIFICATE", certDER), reason: errdefs.ErrInvalidKey, want: "holds a certificate"},
		{name: "ecdsa pkcs8", data: pemBytes("PRIVATE KEY", ecPKCS8), reason: errdefs.ErrInvalidKey, want: "ECDSA"},
		{name: "ecdsa sec1", data: pemBytes("EC PRIVATE KEY", ecSEC1), reason: errdefs.ErrInvalidKey, want: "ECDSA"},
		{name: "ecdsa sec1 after parameters", data: append(pemBytes("EC PARAMETERS", []byte{6, 8, 42, 134, 72, 206, 61, 3, 1, 7}), pemBytes("EC PRIVATE KEY", ecSEC1)...), reason: errdefs.ErrInvalidKey, want: "ECDSA"},
		{name: "ed25519", data: pemBytes("PRIVATE KEY", edPKCS8), reason: errdefs.ErrInvalidKey, want: "Ed25519"},
		{name: "openssh", data: pemBytes("OPENSSH PRIVATE KEY", openssh), reason: errdefs.ErrInvalidKey, want: "ssh-keygen -p -m pem -f KEY"},
		{name: "dsa", data: pemBytes("DSA PRIVATE KEY", []byte{0x30, 0x00}), reason: errdefs.ErrInvalidKey, want: "DSA key"},
		{name: "not pem", data: []byte("hello, this is not a key\n"), reason: errdefs.ErrInvalidKey, want: "not PEM-encoded"},
		{name: "truncated pem", data: pkcs1[:len(pkcs1)/2], reason: errdefs.ErrInvalidKey, want: "PEM data is malformed"},
		{name: "corrupt pkcs1 body", data: pemBytes("RSA PRIVATE KEY", []byte("garbage")), reason: errdefs.ErrInvalidKey, want: "PKCS#1 RSA private key data is invalid"},
		{name: "corrupt pkcs8 body", data: pemBytes("PRIVATE KEY", []byte("garbage")), reason: errdefs.ErrInvalidKey, want: "PKCS#8 private key data is invalid"},
		{name: "unknown block", data: pemBytes("WHATEVER", []byte("x")), reason: errdefs.ErrInvalidKey, want: `PEM block of type "WHATEVER"`},
	}
	// A file that stats as regular but fails to read: the kernel answers
	// reads at offset zero of /proc/self/mem with EIO.
	if _, err := os.Stat("/proc/self/mem"); err == nil {
		tests = append(tests, tc{name: "read error", path: "/proc/self/mem", reason: errdefs.ErrPermissionDenied, want: "cannot be read"})
	}
	if os.Geteuid() != 0 {
		p := writeFile(t, dir, "noperm.pem", pkcs1)
		if err := os.Chmod(p, 0); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, tc{name: "permission denied", path: p, reason: errdefs.ErrPermissionDenied, want: "permission denied"})
	}

	messages := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.path
			if p == "" {
				p = writeFile(t, dir, strings.ReplaceAll(tt.name, " ", "_")+".pem", tt.data)
			}
			key, raw, err := LoadPrivateKey(p)
			if err == nil {
				t.Fatalf("LoadPrivateKey(%s) succeeded, want an error", tt.name)
			}
			if key != nil || raw != nil {
				t.Error("a failed load returned key material")
			}
			var ge *errdefs.GitHubError
			if !errors.As(err, &ge) {
				t.Fatalf("error %T is not a *errdefs.GitHubError", err)
			}
			if !errors.Is(err, errdefs.ErrGitHub) || !errors.Is(err, tt.reason) {
				t.Errorf("error %v does not match class ErrGitHub and reason %v", err, tt.reason)
			}
			if ge.Path != p || !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not name the path %q", err, p)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			messages[tt.want] = ge.Msg
		})
	}
	seen := map[string]string{}
	for want, msg := range messages {
		if other, dup := seen[msg]; dup {
			t.Errorf("cases %q and %q share the message %q", want, other, msg)
		}
		seen[msg] = want
	}
}

func TestLoadPrivateKeyEmptyPath(t *testing.T) {
	_, _, err := LoadPrivateKey("")
	if !errors.Is(err, errdefs.ErrMissingRequired) || !strings.Contains(err.Error(), "github.private_key_path") {
		t.Fatalf("LoadPrivateKey(\"\") = %v, want a missing-required error naming github.private_key_path", err)
	}
}

// FuzzParsePrivateKey feeds arbitrary file contents to the key parser: it
// must never panic, and must return a key exactly when it reports success.
func FuzzParsePrivateKey(f *testing.F) {
	key := testRSAKey()
	f.Add(pemBytes("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)))
	f.Add(pemBytes("PRIVATE KEY", []byte{0x30, 0x03, 0x02, 0x01, 0x00}))
	f.Add(pemBytes("OPENSSH PRIVATE KEY", []byte("openssh-key-v1\x00")))
	f.Add([]byte("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\nAAAA\n-----END RSA PRIVATE KEY-----\n"))
	f.Add([]byte("ssh-rsa AAAA"))
	f.Add([]byte("not a key"))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, block, err := parsePrivateKey(data)
		if (err == nil) != (k != nil && block != nil) {
			t.Fatalf("err %v with key %v block %v", err, k != nil, block != nil)
		}
		if err != nil && err.Error() == "" {
			t.Fatal("empty error message")
		}
	})
}
