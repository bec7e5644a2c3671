package egress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/podbot/podbot/errdefs"
)

// MaxSecretsFileBytes bounds a secrets file.
const MaxSecretsFileBytes = 2 << 20

// secretsFileVersion is the only version ReadSecretsFile accepts.
const secretsFileVersion = 1

// secretsFile is the JSON form of the vault on disk. Unlike Secret, its
// entries carry the value: this file is the one way values reach the
// proxy.
type secretsFile struct {
	Version int          `json:"version"`
	Secrets []fileSecret `json:"secrets"`
}

type fileSecret struct {
	Name          string     `json:"name"`
	Hosts         []fileRule `json:"hosts"`
	Header        string     `json:"header,omitempty"`
	BasicAuthUser string     `json:"basic_auth_user,omitempty"`
	Placeholder   string     `json:"placeholder"`
	Value         string     `json:"value"`
}

// ErrBadSecretsFile classes a secrets file that ReadSecretsFile refuses.
var ErrBadSecretsFile = errors.New("bad egress secrets file")

// WriteSecretsFile writes ss to path atomically (a temporary file in the
// same directory, mode 0600, synced, renamed over path), in the form
// ReadSecretsFile reads. The secrets are validated first; errors never
// hold a value.
func WriteSecretsFile(path string, ss []Secret) error {
	const op = "write egress secrets"
	data, err := MarshalSecrets(ss)
	if err != nil {
		var fe *errdefs.FilesystemError
		if errors.As(err, &fe) {
			fe.Path = path
		}
		return err
	}
	return writeFileAtomic(path, data, 0o600, op)
}

// MarshalSecrets is the content of a secrets file holding ss, exactly as
// WriteSecretsFile writes it (for a vault that reaches the proxy another
// way, such as a Kubernetes Secret). The secrets are validated first;
// errors never hold a value.
func MarshalSecrets(ss []Secret) ([]byte, error) {
	const op = "write egress secrets"
	if err := validateSecrets(ss); err != nil {
		return nil, &errdefs.FilesystemError{Op: op, Err: err}
	}
	sf := secretsFile{Version: secretsFileVersion, Secrets: make([]fileSecret, len(ss))}
	for i, s := range ss {
		sf.Secrets[i] = fileSecret{Name: s.Name, Hosts: toFileRules(s.Hosts), Header: s.Header,
			BasicAuthUser: s.BasicAuthUser, Placeholder: s.Placeholder, Value: s.Value}
	}
	data, err := json.Marshal(sf)
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: op, Msg: "cannot encode the secrets"}
	}
	data = append(data, '\n')
	if len(data) > MaxSecretsFileBytes {
		return nil, &errdefs.FilesystemError{Op: op, Reason: errdefs.ErrRefused,
			Msg: fmt.Sprintf("the secrets take more than the %d bytes a secrets file may hold", MaxSecretsFileBytes)}
	}
	return data, nil
}

// ReadSecretsFile reads a secrets file written by WriteSecretsFile. It
// refuses anything but a regular file that only its owner may read or
// write (mode 0600 or stricter), a file over MaxSecretsFileBytes, JSON
// with unknown fields or trailing data, another version, and any secret
// ValidateSecret refuses. Content errors match ErrBadSecretsFile and never
// hold a value.
func ReadSecretsFile(path string) ([]Secret, error) {
	const op = "read egress secrets"
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: op, Path: path, Err: err}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: op, Path: path, Err: err}
	}
	if !st.Mode().IsRegular() {
		return nil, &errdefs.FilesystemError{Op: op, Path: path, Reason: errdefs.ErrRefused, Msg: "not a regular file"}
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, &errdefs.FilesystemError{Op: op, Path: path, Reason: errdefs.ErrRefused,
			Msg: fmt.Sprintf("mode %04o lets others read it; it must be 0600", st.Mode().Perm())}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSecretsFileBytes+1))
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: op, Path: path, Err: err}
	}
	ss, err := ParseSecrets(data)
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: op, Path: path, Err: err}
	}
	return ss, nil
}

// ParseSecrets parses the content of a secrets file, as ReadSecretsFile
// does.
func ParseSecrets(data []byte) ([]Secret, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadSecretsFile, fmt.Sprintf(format, a...))
	}
	if len(data) > MaxSecretsFileBytes {
		return nil, bad("larger than %d bytes", MaxSecretsFileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var sf secretsFile
	if err := dec.Decode(&sf); err != nil {
		// A JSON syntax error quotes no input, but a type error may: say
		// only where.
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, bad("not JSON (offset %d)", se.Offset)
		}
		return nil, bad("not a secrets file")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bad("trailing data after the secrets")
	}
	if sf.Version != secretsFileVersion {
		return nil, bad("version %d, want %d", sf.Version, secretsFileVersion)
	}
	if sf.Secrets == nil {
		return nil, bad(`"secrets" is missing`)
	}
	if len(sf.Secrets) > MaxSecrets {
		return nil, bad("more than %d secrets", MaxSecrets)
	}
	out := make([]Secret, 0, len(sf.Secrets))
	for i, fs := range sf.Secrets {
		if len(fs.Hosts) > maxSecretHosts {
			return nil, bad("secret %d: more than %d hosts", i, maxSecretHosts)
		}
		hosts, err := fromFileRules(fs.Hosts)
		if err != nil {
			return nil, bad("secret %d: hosts: %v", i, err)
		}
		out = append(out, Secret{Name: fs.Name, Hosts: hosts, Header: fs.Header, BasicAuthUser: fs.BasicAuthUser,
			Placeholder: fs.Placeholder, Value: fs.Value})
	}
	if err := validateSecrets(out); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSecretsFile, err)
	}
	return out, nil
}
