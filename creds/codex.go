package creds

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/podbot/podbot/errdefs"
)

// Codex's files below CodexDir.
const (
	// CodexAuthFile holds Codex's credentials: an API key
	// (CodexAPIKeyField) and/or ChatGPT OAuth tokens.
	CodexAuthFile = "auth.json"
	// CodexConfigFile is Codex's configuration (TOML).
	CodexConfigFile = "config.toml"
	// CodexAPIKeyField is the auth.json field that holds an OpenAI API key.
	CodexAPIKeyField = "OPENAI_API_KEY"
	// CodexAuthName is auth.json's entry name in the credentials archive.
	CodexAuthName = CodexDir + "/" + CodexAuthFile
)

// Bounds on what is read from ~/.codex.
const (
	// MaxCodexAuthBytes bounds auth.json.
	MaxCodexAuthBytes = 1 << 20
	// MaxCodexConfigBytes bounds config.toml.
	MaxCodexConfigBytes = 1 << 20
)

// CodexAuth is the host's ~/.codex/auth.json as read once, bounded. Its
// APIKey is a real secret: never log or print it.
type CodexAuth struct {
	// Path is the host file.
	Path string
	// APIKey is the OPENAI_API_KEY field's value ("" when absent, null or
	// empty).
	APIKey string
	// HasTokens reports a non-null "tokens" field (ChatGPT OAuth tokens),
	// which stays in the uploaded copy.
	HasTokens bool

	fields map[string]json.RawMessage
}

// String names the file without its contents.
func (a *CodexAuth) String() string { return "codex auth " + a.Path }

// GoString names the file without its contents, for %#v.
func (a *CodexAuth) GoString() string {
	return "creds.CodexAuth{Path: " + fmt.Sprintf("%q", a.Path) + "}"
}

// ReadCodexAuth reads hostHome/.codex/auth.json, at most MaxCodexAuthBytes.
// It returns (nil, nil) when the file does not exist. A file that is not a
// regular file (a symlink included: its target could be copied elsewhere
// under .codex), is larger than the bound, or is not a JSON object with a
// string (or null) OPENAI_API_KEY is an *errdefs.FilesystemError naming it
// that never holds the file's contents.
func ReadCodexAuth(hostHome string) (*CodexAuth, error) {
	p := filepath.Join(hostHome, CodexDir, CodexAuthFile)
	bad := func(msg string, err error) error {
		return &errdefs.FilesystemError{Op: "read", Path: p, Msg: msg, Err: err}
	}
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, bad("cannot read Codex's credentials", err)
	}
	if !st.Mode().IsRegular() {
		return nil, bad("is not a regular file; podbot cannot move its API key into the vault", nil)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, bad("cannot read Codex's credentials", err)
	}
	defer f.Close()
	opened, err := f.Stat()
	if err != nil || !os.SameFile(opened, st) {
		return nil, bad("changed while podbot read it; try again", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxCodexAuthBytes+1))
	if err != nil {
		return nil, bad("cannot read Codex's credentials", err)
	}
	if len(data) > MaxCodexAuthBytes {
		return nil, bad(fmt.Sprintf("is larger than %d bytes; podbot cannot move its API key into the vault", MaxCodexAuthBytes), nil)
	}
	return ParseCodexAuth(p, data)
}

// ParseCodexAuth parses the contents of an auth.json read from path (used
// in errors only). Errors never hold the contents.
func ParseCodexAuth(path string, data []byte) (*CodexAuth, error) {
	a := &CodexAuth{Path: path}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&a.fields); err != nil || a.fields == nil {
		// The decoder's message may quote the file; keep only its class.
		return nil, &errdefs.FilesystemError{Op: "parse", Path: path, Msg: "is not a JSON object; podbot cannot move its API key into the vault"}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &errdefs.FilesystemError{Op: "parse", Path: path, Msg: "holds more than one JSON value; podbot cannot move its API key into the vault"}
	}
	if raw, ok := a.fields[CodexAPIKeyField]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &a.APIKey); err != nil {
			return nil, &errdefs.FilesystemError{Op: "parse", Path: path, Msg: CodexAPIKeyField + " is not a string; podbot cannot move it into the vault"}
		}
	}
	if raw, ok := a.fields["tokens"]; ok && !isNull(raw) {
		a.HasTokens = true
	}
	return a, nil
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// WithAPIKey returns auth.json re-encoded with OPENAI_API_KEY set to key
// (a vault placeholder) and every other field as it was.
func (a *CodexAuth) WithAPIKey(key string) ([]byte, error) {
	out := make(map[string]json.RawMessage, len(a.fields))
	for k, v := range a.fields {
		out[k] = v
	}
	v, err := json.Marshal(key)
	if err != nil {
		return nil, err
	}
	out[CodexAPIKeyField] = v
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "encode", Path: a.Path, Msg: "cannot re-encode Codex's credentials"}
	}
	return append(b, '\n'), nil
}

// CodexBaseURLHost reads hostHome/.codex/config.toml (bounded) and returns
// the host (with its port when the URL names one) of its top-level
// openai_base_url, the endpoint Codex sends its API key to instead of
// api.openai.com. It returns "" when the file, the key or a usable https
// or http URL is absent; a file it cannot read or parse is an error.
func CodexBaseURLHost(hostHome string) (string, error) {
	p := filepath.Join(hostHome, CodexDir, CodexConfigFile)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", &errdefs.FilesystemError{Op: "open", Path: p, Msg: "cannot read Codex's configuration", Err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxCodexConfigBytes+1))
	if err != nil {
		return "", &errdefs.FilesystemError{Op: "read", Path: p, Msg: "cannot read Codex's configuration", Err: err}
	}
	if len(data) > MaxCodexConfigBytes {
		return "", &errdefs.FilesystemError{Op: "read", Path: p, Msg: fmt.Sprintf("is larger than %d bytes", MaxCodexConfigBytes)}
	}
	return codexBaseURLHost(p, data)
}

func codexBaseURLHost(p string, data []byte) (string, error) {
	var cfg struct {
		OpenAIBaseURL string `toml:"openai_base_url"`
	}
	if err := toml.Unmarshal(data, &cfg); err != nil {
		return "", &errdefs.FilesystemError{Op: "parse", Path: p, Msg: "is not valid TOML"}
	}
	if cfg.OpenAIBaseURL == "" {
		return "", nil
	}
	u, err := url.Parse(cfg.OpenAIBaseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
		return "", &errdefs.FilesystemError{Op: "parse", Path: p, Msg: "openai_base_url is not an http(s) URL with a host"}
	}
	host := strings.ToLower(u.Hostname())
	if u.Port() != "" {
		return net.JoinHostPort(host, u.Port()), nil
	}
	return host, nil
}

// override returns the contents podbot supplies for the regular file whose archived contents podbot supplies
// instead of the host's (the vault's copy of auth.json).
func (b *builder) override(name string) ([]byte, bool) {
	data, ok := b.overrides[path.Clean(name)]
	return data, ok
}

// writeOverride adds name with data, keeping the host file's mode, owner
// mapping and time.
func (b *builder) writeOverride(hdr *tar.Header, hostPath string, data []byte) error {
	hdr.Size = int64(len(data))
	if err := b.reserve(hdr.Size, hostPath); err != nil {
		return err
	}
	if err := b.writeHeader(hdr, hostPath); err != nil {
		return err
	}
	if _, err := b.tw.Write(data); err != nil {
		return &errdefs.FilesystemError{Op: "archive", Path: hostPath, Msg: "cannot add to the credentials archive", Err: err}
	}
	return nil
}

// checkForbidden returns an *errdefs.FilesystemError naming the first
// archive entry whose contents hold one of forbidden (real secret values
// that must not enter the sandbox). The error never holds the value.
func checkForbidden(tarball []byte, home string, forbidden []string) error {
	hit := false
	for _, f := range forbidden {
		if f != "" && bytes.Contains(tarball, []byte(f)) {
			hit = true
			break
		}
	}
	if !hit {
		return nil
	}
	tr := tar.NewReader(bytes.NewReader(tarball))
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			break
		}
		for _, f := range forbidden {
			if f != "" && (bytes.Contains(data, []byte(f)) || strings.Contains(hdr.Name, f) || strings.Contains(hdr.Linkname, f)) {
				return &errdefs.FilesystemError{Op: "archive", Path: filepath.Join(home, filepath.FromSlash(hdr.Name)),
					Msg: "holds a secret the credential vault keeps out of the sandbox; remove it there, add it to creds.exclude, or turn the matching creds.copy_* off"}
			}
		}
	}
	return &errdefs.FilesystemError{Op: "archive", Path: home,
		Msg: "the credentials archive holds a secret the credential vault keeps out of the sandbox; add the file that holds it to creds.exclude"}
}
