package engine

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// Endpoint schemes after normalisation. A tcp:// endpoint is stored as
// SchemeHTTP: podbot, like the Docker CLI, treats tcp as plain HTTP.
const (
	SchemeUnix  = "unix"
	SchemeNpipe = "npipe"
	SchemeHTTP  = "http"
	SchemeHTTPS = "https"
)

// endpointKey is the configuration key endpoint errors are reported against.
const endpointKey = "engine_socket"

// Endpoint is a parsed engine address.
type Endpoint struct {
	// Scheme is one of SchemeUnix, SchemeNpipe, SchemeHTTP or SchemeHTTPS.
	Scheme string
	// Address is the socket or pipe path for unix and npipe, and
	// host[:port] (optionally followed by a base path) for http and https.
	Address string
	// Raw is the value as the user wrote it. Print it only through
	// RedactEndpoint: it may carry a password that ParseEndpoint refuses.
	Raw string
}

// String returns the normalised endpoint as SCHEME://ADDRESS, or, for an
// endpoint that was never parsed, its raw value with any userinfo masked.
func (e Endpoint) String() string {
	if e.Scheme == "" {
		return RedactEndpoint(e.Raw)
	}
	s := e.Scheme + "://" + e.Address
	if authority, _, _ := strings.Cut(e.Address, "/"); strings.Contains(authority, "@") {
		// Not made by ParseEndpoint, which refuses userinfo.
		return RedactEndpoint(s)
	}
	return s
}

// GoString is String, so %#v never prints Raw.
func (e Endpoint) GoString() string { return "engine.Endpoint(" + e.String() + ")" }

// LogValue is String, so structured handlers never print Raw.
func (e Endpoint) LogValue() slog.Value { return slog.StringValue(e.String()) }

// MarshalText is String, so JSON encodings never carry Raw.
func (e Endpoint) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// userinfoMask replaces a password (or a lone user, which may be a token)
// in a printed endpoint.
const userinfoMask = "xxxxx"

// RedactEndpoint masks the userinfo of an endpoint written as
// SCHEME://USER:PASSWORD@HOST...: the password becomes "xxxxx"
// (user:xxxxx@host), and a lone user, which may be a token, becomes
// "xxxxx" (xxxxx@host). Everything up to the last '@' of the value counts
// as userinfo, so a password holding '/', '?' or '#' is masked too.
// unix:// and npipe:// paths and values without "://" are returned
// unchanged. Use it wherever an endpoint the user wrote is printed.
func RedactEndpoint(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	switch strings.ToLower(strings.TrimSpace(scheme)) {
	case SchemeUnix, SchemeNpipe:
		return s
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return s
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if !hasPassword || strings.ContainsAny(user, "/?#") {
		return scheme + "://" + userinfoMask + rest[at:]
	}
	return scheme + "://" + user + ":" + userinfoMask + rest[at:]
}

// IsSocket reports whether the endpoint is a local unix socket or named pipe.
func (e Endpoint) IsSocket() bool { return e.Scheme == SchemeUnix || e.Scheme == SchemeNpipe }

// ParseEndpoint parses an engine endpoint: unix://PATH, npipe://PATH,
// tcp://HOST:PORT (treated as http), http://HOST:PORT, https://HOST:PORT, or
// a bare path. A bare path that starts with `\\` or `//` is a named pipe;
// any other bare path is a unix socket. Schemes are case-insensitive. An
// unknown scheme is an error, never a file path. Errors are
// *errdefs.ConfigError for the key engine_socket.
func ParseEndpoint(s string) (Endpoint, error) {
	raw := s
	s = strings.TrimSpace(s)
	if s == "" {
		return Endpoint{}, endpointError(raw, errdefs.ErrMissingRequired, "the engine endpoint is empty; expected unix:///path/to/socket, npipe://, tcp://, http://, https:// or a socket path")
	}
	if strings.ContainsAny(s, "\x00\n\r") {
		return Endpoint{}, endpointError(raw, errdefs.ErrInvalidValue, "the engine endpoint contains a NUL or line break")
	}
	if strings.HasPrefix(s, `\\`) || strings.HasPrefix(s, "//") {
		return Endpoint{Scheme: SchemeNpipe, Address: s, Raw: raw}, nil
	}
	scheme, rest, hasScheme := splitScheme(s)
	if !hasScheme {
		return Endpoint{Scheme: SchemeUnix, Address: s, Raw: raw}, nil
	}
	if !strings.HasPrefix(rest, "//") {
		return Endpoint{}, endpointError(raw, errdefs.ErrInvalidValue,
			fmt.Sprintf("scheme %q without //; write %s://ADDRESS", scheme, scheme))
	}
	addr := rest[2:]
	switch scheme {
	case "unix":
		if addr == "" {
			return Endpoint{}, endpointError(raw, errdefs.ErrInvalidValue, "unix:// needs a socket path, e.g. unix:///run/podman/podman.sock")
		}
		return Endpoint{Scheme: SchemeUnix, Address: addr, Raw: raw}, nil
	case "npipe":
		if addr == "" {
			return Endpoint{}, endpointError(raw, errdefs.ErrInvalidValue, "npipe:// needs a pipe path, e.g. npipe:////./pipe/docker_engine")
		}
		return Endpoint{Scheme: SchemeNpipe, Address: addr, Raw: raw}, nil
	case "tcp", "http", "https":
		out := SchemeHTTP
		if scheme == "https" {
			out = SchemeHTTPS
		}
		host, err := parseNetAddress(scheme, addr)
		if err != nil {
			return Endpoint{}, endpointError(raw, errdefs.ErrInvalidValue, err.Error())
		}
		return Endpoint{Scheme: out, Address: host, Raw: raw}, nil
	default:
		return Endpoint{}, endpointError(raw, errdefs.ErrInvalidValue,
			fmt.Sprintf("unknown scheme %q; supported: unix://, npipe://, tcp://, http://, https:// or a bare socket path", scheme))
	}
}

// splitScheme reports a URL-like scheme prefix ("name:") of at least two
// characters, so that a Windows drive letter is never taken for a scheme.
// The scheme is returned in lower case.
func splitScheme(s string) (scheme, rest string, ok bool) {
	i := strings.IndexByte(s, ':')
	if i < 2 {
		return "", "", false
	}
	for j := 0; j < i; j++ {
		c := s[j]
		letter := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if j == 0 && !letter {
			return "", "", false
		}
		if !letter && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.' {
			return "", "", false
		}
	}
	return strings.ToLower(s[:i]), s[i+1:], true
}

// parseNetAddress validates host[:port][/path] for the network schemes. It
// refuses credentials, queries and fragments: secrets never go in URLs.
func parseNetAddress(scheme, addr string) (string, error) {
	u, err := url.Parse("http://" + addr)
	if err != nil {
		// url's errors quote the whole URL, userinfo included.
		return "", fmt.Errorf("%s is not a valid address", RedactEndpoint(scheme+"://"+addr))
	}
	switch {
	case u.User != nil:
		return "", fmt.Errorf("%s:// endpoint must not carry credentials; use TLS client certificates instead", scheme)
	case u.Hostname() == "":
		return "", fmt.Errorf("%s:// needs a host, e.g. %s://127.0.0.1:2375", scheme, scheme)
	case u.RawQuery != "" || u.Fragment != "" || strings.Contains(addr, "?") || strings.Contains(addr, "#"):
		return "", fmt.Errorf("%s:// endpoint must not have a query or fragment", scheme)
	}
	if p := u.Port(); p != "" {
		for _, c := range p {
			if c < '0' || c > '9' {
				return "", fmt.Errorf("%s:// port %q is not a number", scheme, p)
			}
		}
	}
	return u.Host + strings.TrimRight(u.EscapedPath(), "/"), nil
}

func endpointError(raw string, reason error, msg string) error {
	if strings.TrimSpace(raw) != "" {
		msg = fmt.Sprintf("bad endpoint %q: %s", truncate(RedactEndpoint(raw), 256), msg)
	}
	return &errdefs.ConfigError{Key: endpointKey, Reason: reason, Msg: msg}
}
