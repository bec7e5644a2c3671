package github

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/podbot/podbot/errdefs"
)

// MaxKeyFileSize bounds how much of a private key file is read. A PEM RSA
// key of 8192 bits is well under 8 KiB; anything larger is not a key.
const MaxKeyFileSize = 64 << 10

const opLoadKey = "load key"

// LoadPrivateKey reads the GitHub App private key at path. It accepts RSA
// keys in PEM form, PKCS#1 ("RSA PRIVATE KEY") or PKCS#8 ("PRIVATE KEY"),
// and returns the parsed key with the PEM bytes of the block it came from.
//
// Every other input is refused with an *errdefs.GitHubError naming the path
// and saying what is wrong: a missing file (errdefs.ErrNotFound), an
// unreadable file (errdefs.ErrPermissionDenied), and an empty file, an
// encrypted key, a public key, a certificate, an ECDSA, Ed25519 or DSA key,
// an OpenSSH-format key or data that is not PEM (errdefs.ErrInvalidKey).
func LoadPrivateKey(path string) (*rsa.PrivateKey, []byte, error) {
	data, err := readKeyFile(path)
	if err != nil {
		return nil, nil, err
	}
	key, block, err := parsePrivateKey(data)
	if err != nil {
		var ke *keyError
		if errors.As(err, &ke) {
			return nil, nil, &errdefs.GitHubError{Op: opLoadKey, Path: path, Reason: errdefs.ErrInvalidKey, Msg: ke.msg, Err: ke.err}
		}
		return nil, nil, &errdefs.GitHubError{Op: opLoadKey, Path: path, Reason: errdefs.ErrInvalidKey, Err: err}
	}
	return key, pem.EncodeToMemory(block), nil
}

func readKeyFile(path string) ([]byte, error) {
	fail := func(reason error, msg string, err error) error {
		return &errdefs.GitHubError{Op: opLoadKey, Path: path, Reason: reason, Msg: msg, Err: err}
	}
	if path == "" {
		return nil, fail(errdefs.ErrMissingRequired, "no private key path given; set github.private_key_path to the App's .pem file", nil)
	}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fail(errdefs.ErrNotFound, "private key file does not exist; set github.private_key_path to the App's .pem file", nil)
	case errors.Is(err, fs.ErrPermission):
		return nil, fail(errdefs.ErrPermissionDenied, "private key file cannot be read (permission denied); make it readable by the user running podbot", nil)
	case errors.Is(err, syscall.ENOTDIR):
		return nil, fail(errdefs.ErrNotFound, "a parent of the path is not a directory; set github.private_key_path to the App's .pem file", nil)
	case err != nil:
		return nil, fail(errdefs.ErrPermissionDenied, "private key file cannot be read", err)
	case info.IsDir():
		return nil, fail(errdefs.ErrInvalidKey, "private key path is a directory; point github.private_key_path at the .pem file", nil)
	case !info.Mode().IsRegular():
		return nil, fail(errdefs.ErrInvalidKey, "private key path is not a regular file", nil)
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, fail(errdefs.ErrPermissionDenied, "private key file cannot be read (permission denied); make it readable by the user running podbot", nil)
		}
		return nil, fail(errdefs.ErrPermissionDenied, "private key file cannot be read", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxKeyFileSize+1))
	if err != nil {
		return nil, fail(errdefs.ErrPermissionDenied, "private key file cannot be read", err)
	}
	if len(data) > MaxKeyFileSize {
		return nil, fail(errdefs.ErrInvalidKey, fmt.Sprintf("file is larger than %d bytes, too large to be a private key", MaxKeyFileSize), nil)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fail(errdefs.ErrInvalidKey, "private key file is empty; download a new private key from the GitHub App settings", nil)
	}
	return data, nil
}

// keyError is a parse failure with the message meant for the user.
type keyError struct {
	msg string
	err error
}

func (e *keyError) Error() string { return e.msg }

func badKey(msg string, err error) error { return &keyError{msg: msg, err: err} }

// parsePrivateKey classifies the PEM content and parses an RSA key.
func parsePrivateKey(data []byte) (*rsa.PrivateKey, *pem.Block, error) {
	block := firstBlock(data)
	if block == nil {
		return nil, nil, classifyNonPEM(data)
	}
	if x509.IsEncryptedPEMBlock(block) || block.Type == "ENCRYPTED PRIVATE KEY" { //nolint:staticcheck // detection only, never decryption
		return nil, nil, badKey("private key is encrypted with a passphrase; GitHub App keys must be unencrypted PEM (remove the passphrase, e.g. `openssl pkey -in KEY -out KEY.pem`)", nil)
	}
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, nil, badKey("PKCS#1 RSA private key data is invalid (corrupted or truncated file)", err)
		}
		return validated(key, block)
	case "PRIVATE KEY":
		parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, nil, badKey("PKCS#8 private key data is invalid (corrupted, truncated or an unsupported algorithm)", err)
		}
		switch key := parsed.(type) {
		case *rsa.PrivateKey:
			return validated(key, block)
		case *ecdsa.PrivateKey:
			return nil, nil, ecdsaKey()
		case ed25519.PrivateKey:
			return nil, nil, ed25519Key()
		default:
			return nil, nil, badKey(fmt.Sprintf("PKCS#8 key of type %T is not supported; GitHub Apps sign with RSA (RS256)", parsed), nil)
		}
	case "EC PRIVATE KEY":
		return nil, nil, ecdsaKey()
	case "OPENSSH PRIVATE KEY":
		return nil, nil, badKey("key is in OpenSSH format; convert it to PEM with `ssh-keygen -p -m pem -f KEY` (GitHub App keys downloaded from GitHub are already PEM)", nil)
	case "DSA PRIVATE KEY":
		return nil, nil, badKey("key is a DSA key; GitHub Apps sign with RSA (RS256): use the App's RSA private key", nil)
	case "PUBLIC KEY", "RSA PUBLIC KEY":
		return nil, nil, badKey("file holds a public key, not a private key; use the private key downloaded from the GitHub App settings", nil)
	case "CERTIFICATE", "TRUSTED CERTIFICATE", "X509 CERTIFICATE":
		return nil, nil, badKey("file holds a certificate, not a private key; use the private key downloaded from the GitHub App settings", nil)
	default:
		return nil, nil, badKey(fmt.Sprintf("PEM block of type %q is not a private key; expected \"RSA PRIVATE KEY\" or \"PRIVATE KEY\"", block.Type), nil)
	}
}

func ecdsaKey() error {
	return badKey("key is an ECDSA key; GitHub Apps sign with RSA (RS256): use the App's RSA private key", nil)
}

func ed25519Key() error {
	return badKey("key is an Ed25519 key; GitHub Apps sign with RSA (RS256): use the App's RSA private key", nil)
}

func validated(key *rsa.PrivateKey, block *pem.Block) (*rsa.PrivateKey, *pem.Block, error) {
	if err := key.Validate(); err != nil {
		return nil, nil, badKey("RSA private key fails validation (corrupted file)", err)
	}
	return key, &pem.Block{Type: block.Type, Bytes: block.Bytes}, nil
}

// firstBlock returns the first PEM block that is not a parameters block, or
// nil when data holds no PEM block at all.
func firstBlock(data []byte) *pem.Block {
	rest := data
	for {
		block, next := pem.Decode(rest)
		if block == nil {
			return nil
		}
		if block.Type != "EC PARAMETERS" {
			return block
		}
		rest = next
	}
}

// classifyNonPEM explains data that holds no decodable PEM block.
func classifyNonPEM(data []byte) error {
	trimmed := bytes.TrimSpace(data)
	for _, prefix := range []string{"ssh-rsa ", "ssh-ed25519 ", "ecdsa-sha2-", "ssh-dss "} {
		if bytes.HasPrefix(trimmed, []byte(prefix)) {
			return badKey("file holds an OpenSSH public key, not a private key; use the private key downloaded from the GitHub App settings", nil)
		}
	}
	if bytes.Contains(trimmed, []byte("-----BEGIN")) {
		return badKey("PEM data is malformed (corrupted or truncated file); download a new private key from the GitHub App settings", nil)
	}
	return badKey("file is not PEM-encoded; expected a block starting with \"-----BEGIN RSA PRIVATE KEY-----\" or \"-----BEGIN PRIVATE KEY-----\"", nil)
}
