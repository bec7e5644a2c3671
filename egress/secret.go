package egress

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/textproto"
	"strings"
)

// Bounds on a secret.
const (
	// MaxSecretValueBytes bounds a secret's real value.
	MaxSecretValueBytes = 16 << 10
	// MaxSecrets bounds the secrets one proxy holds.
	MaxSecrets = 64
	// maxSecretNameLen bounds a secret's name.
	maxSecretNameLen = 64
	// maxSecretHosts bounds one secret's host rules.
	maxSecretHosts = 64
	// maxTemplateLen bounds a header template.
	maxTemplateLen = 256
)

// PlaceholderPrefix starts every placeholder.
const PlaceholderPrefix = "podbot-secret-"

// placeholderRandLen is the length of a placeholder's random part: 24
// base32 characters, 120 bits.
const placeholderRandLen = 24

var placeholderEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// Secret is one credential of the vault: the sandbox holds Placeholder,
// and the proxy puts Value in its place on requests to Hosts only.
//
// Exactly one of Header and BasicAuthUser says where the value goes. Value
// never appears in JSON (the field is skipped), in the policy file, in the
// decision log or in an error: it reaches the proxy through a secrets file
// of its own (WriteSecretsFile).
type Secret struct {
	// Name names the secret in the log and in errors ([a-z0-9_-], unique).
	Name string `json:"name"`
	// Hosts are the destinations the value may be sent to.
	Hosts []Rule `json:"hosts"`
	// Header is a header template, "Name: text{}text", with exactly one
	// "{}" where the value goes ("Authorization: Bearer {}",
	// "x-api-key: {}"). The client sends the same header with the
	// placeholder in the place of {}.
	Header string `json:"header,omitempty"`
	// BasicAuthUser, when set, makes the value the password of HTTP basic
	// authentication with this user (git over HTTPS): the client sends
	// "Authorization: Basic base64(user:placeholder)".
	BasicAuthUser string `json:"basic_auth_user,omitempty"`
	// Placeholder is what the sandbox holds (NewPlaceholder).
	Placeholder string `json:"placeholder"`
	// Value is the real secret. It is never marshalled.
	Value string `json:"-"`
}

// String names the secret without its value.
func (s Secret) String() string { return "secret " + s.Name }

// GoString names the secret without its value, for %#v.
func (s Secret) GoString() string {
	return "egress.Secret{Name: " + fmt.Sprintf("%q", s.Name) + ", Value: <redacted>}"
}

// LogValue names the secret without its value, for log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// ErrBadSecret classes every secret that ValidateSecret refuses.
var ErrBadSecret = errors.New("bad secret")

// SecretError is a secret that is not usable. It names the secret and the
// field, never the value.
type SecretError struct {
	// Name is the secret's name (clipped), or its index when the name
	// itself is bad.
	Name string
	// Field is the field at fault ("name", "hosts", "header", ...).
	Field string
	// Msg says what is wrong.
	Msg string
}

func (e *SecretError) Error() string {
	return fmt.Sprintf("secret %s: %s: %s", e.Name, e.Field, e.Msg)
}

// Is reports ErrBadSecret.
func (e *SecretError) Is(target error) bool { return target == ErrBadSecret }

// ValidName reports whether name may name a secret: 1-64 characters of
// a-z, 0-9, '_' and '-'.
func ValidName(name string) bool {
	if name == "" || len(name) > maxSecretNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// NewPlaceholder returns a fresh placeholder for the secret name:
// "podbot-secret-<name>-<24 base32 characters>" from crypto/rand.
func NewPlaceholder(name string) (string, error) {
	if !ValidName(name) {
		return "", &SecretError{Name: clip(name), Field: "name", Msg: "use 1-64 characters of a-z, 0-9, '_' and '-'"}
	}
	var b [15]byte // 120 bits, 24 base32 characters
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return PlaceholderPrefix + name + "-" + placeholderEncoding.EncodeToString(b[:]), nil
}

// validPlaceholder reports whether ph is a placeholder NewPlaceholder
// could have made for name.
func validPlaceholder(name, ph string) bool {
	r, ok := strings.CutPrefix(ph, PlaceholderPrefix+name+"-")
	if !ok || len(r) != placeholderRandLen {
		return false
	}
	_, err := placeholderEncoding.DecodeString(r)
	return err == nil
}

// HeaderTemplate is a parsed Secret.Header.
type HeaderTemplate struct {
	// Name is the header's canonical name.
	Name string
	// Prefix and Suffix surround the value.
	Prefix, Suffix string
}

// ParseHeaderTemplate parses "Name: text{}text". The name must be an HTTP
// token and not one the proxy manages itself (Host, Content-Length,
// Transfer-Encoding, Connection, Upgrade, TE, Trailer, Proxy-*); the text
// holds exactly one "{}" and no control characters.
func ParseHeaderTemplate(s string) (HeaderTemplate, error) {
	if len(s) > maxTemplateLen {
		return HeaderTemplate{}, fmt.Errorf("longer than %d characters", maxTemplateLen)
	}
	name, val, ok := strings.Cut(s, ":")
	if !ok {
		return HeaderTemplate{}, errors.New(`expected "Header-Name: text{}", e.g. "Authorization: Bearer {}"`)
	}
	name = strings.TrimSpace(name)
	if !validToken(name) {
		return HeaderTemplate{}, fmt.Errorf("%q is not a header name", clip(name))
	}
	canon := textproto.CanonicalMIMEHeaderKey(name)
	switch {
	case canon == "Host", canon == "Content-Length", canon == "Transfer-Encoding", canon == "Connection",
		canon == "Upgrade", canon == "Te", canon == "Trailer", canon == "Keep-Alive",
		strings.HasPrefix(canon, "Proxy-"):
		return HeaderTemplate{}, fmt.Errorf("the proxy manages the %s header itself", canon)
	}
	val = strings.TrimSpace(val)
	if strings.Count(val, "{}") != 1 {
		return HeaderTemplate{}, errors.New(`the value must hold exactly one "{}" where the secret goes`)
	}
	if hasControl(val) {
		return HeaderTemplate{}, errors.New("the value holds control characters")
	}
	pre, suf, _ := strings.Cut(val, "{}")
	return HeaderTemplate{Name: canon, Prefix: pre, Suffix: suf}, nil
}

// validToken reports whether s is an HTTP token (RFC 9110 tchar).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(c rune) bool { return c < 0x20 || c == 0x7f })
}

func clip(s string) string {
	if len(s) > 100 {
		s = s[:100] + "..."
	}
	return s
}

// ValidateSecret checks a secret as the proxy uses it: a valid name, at
// least one canonical host rule, exactly one of Header (a valid template)
// and BasicAuthUser, a placeholder NewPlaceholder could have made for the
// name, and a value of 1 to MaxSecretValueBytes bytes without control
// characters (it goes into a header). Errors are *SecretError and never
// hold the value.
func ValidateSecret(s Secret) error {
	bad := func(field, msg string) error { return &SecretError{Name: clip(s.Name), Field: field, Msg: msg} }
	if !ValidName(s.Name) {
		return bad("name", "use 1-64 characters of a-z, 0-9, '_' and '-'")
	}
	if len(s.Hosts) == 0 {
		return bad("hosts", "a secret needs at least one host it may be sent to")
	}
	if len(s.Hosts) > maxSecretHosts {
		return bad("hosts", fmt.Sprintf("more than %d hosts", maxSecretHosts))
	}
	for _, h := range s.Hosts {
		r, err := ParseRule(h.String())
		if err != nil || r.Host != h.Host || len(h.Ports) > maxRulePorts {
			return bad("hosts", fmt.Sprintf("%q is not a valid host rule", clip(h.Host)))
		}
		for _, p := range h.Ports {
			if p < 1 || p > 65535 {
				return bad("hosts", fmt.Sprintf("port %d is out of range", p))
			}
		}
	}
	switch {
	case s.Header != "" && s.BasicAuthUser != "":
		return bad("header", "set header or basic_auth_user, not both")
	case s.Header != "":
		if _, err := ParseHeaderTemplate(s.Header); err != nil {
			return bad("header", err.Error())
		}
	case s.BasicAuthUser != "":
		if len(s.BasicAuthUser) > maxSecretNameLen || hasControl(s.BasicAuthUser) || strings.Contains(s.BasicAuthUser, ":") {
			return bad("basic_auth_user", "1-64 characters, no ':' and no control characters")
		}
	default:
		return bad("header", "set header (e.g. \"Authorization: Bearer {}\") or basic_auth_user")
	}
	if !validPlaceholder(s.Name, s.Placeholder) {
		return bad("placeholder", "not a placeholder made for this secret")
	}
	if s.Value == "" {
		return bad("value", "empty")
	}
	if len(s.Value) > MaxSecretValueBytes {
		return bad("value", fmt.Sprintf("longer than %d bytes", MaxSecretValueBytes))
	}
	if hasControl(s.Value) || strings.Contains(s.Value, PlaceholderPrefix) {
		return bad("value", "holds control characters or a placeholder")
	}
	return nil
}

// validateSecrets checks every secret and that names and placeholders are
// unique.
func validateSecrets(ss []Secret) error {
	if len(ss) > MaxSecrets {
		return &SecretError{Name: "(all)", Field: "secrets", Msg: fmt.Sprintf("more than %d secrets", MaxSecrets)}
	}
	names := map[string]bool{}
	for _, s := range ss {
		if err := ValidateSecret(s); err != nil {
			return err
		}
		if names[s.Name] {
			return &SecretError{Name: s.Name, Field: "name", Msg: "two secrets have this name"}
		}
		names[s.Name] = true
	}
	return nil
}

// cloneSecrets deep-copies ss.
func cloneSecrets(ss []Secret) []Secret {
	out := make([]Secret, len(ss))
	for i, s := range ss {
		s.Hosts = cloneRules(s.Hosts)
		out[i] = s
	}
	return out
}

// belongs reports whether s may be sent to host:port.
func (s *Secret) belongs(host string, port int) bool {
	for _, r := range s.Hosts {
		if r.Matches(host, port) {
			return true
		}
	}
	return false
}

// misuse is a placeholder found where its secret does not belong.
type misuse struct{ secret, where string }

func (m *misuse) Error() string {
	return "the placeholder of secret " + m.secret + " was sent in " + m.where + " to a host that secret does not belong to; refused"
}

// findMisuse returns the first secret not belonging to host:port whose
// placeholder is in h (plainly, or inside a Basic credential) or in
// target (the request target), or nil.
func findMisuse(ss []Secret, host string, port int, h http.Header, target string) *misuse {
	for i := range ss {
		s := &ss[i]
		if s.belongs(host, port) {
			continue
		}
		if strings.Contains(target, s.Placeholder) {
			return &misuse{secret: s.Name, where: "the request target"}
		}
		for k, vs := range h {
			for _, v := range vs {
				if strings.Contains(k, s.Placeholder) || strings.Contains(v, s.Placeholder) || strings.Contains(decodeBasic(v), s.Placeholder) {
					return &misuse{secret: s.Name, where: "the " + clip(k) + " header"}
				}
			}
		}
	}
	return nil
}

// decodeBasic returns the decoded credential of a "Basic ..." value, ""
// for anything else.
func decodeBasic(v string) string {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return ""
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return ""
	}
	return string(b)
}

// inject replaces, in h, the placeholder of every secret of ss that
// belongs to host:port with its value, where the client put it in the
// secret's own form: the template's header with exactly the template's
// text around the placeholder, or a Basic credential of the configured
// user with the placeholder as password. It returns the names of the
// secrets injected. A placeholder in any other form is left as it is: it
// is useless upstream.
func inject(ss []Secret, host string, port int, h http.Header) []string {
	var names []string
	for i := range ss {
		s := &ss[i]
		if !s.belongs(host, port) {
			continue
		}
		if s.BasicAuthUser != "" {
			vs := h["Authorization"] // canonical key: edit in place
			done := false
			for j, v := range vs {
				user, pass, ok := strings.Cut(decodeBasic(v), ":")
				if ok && user == s.BasicAuthUser && pass == s.Placeholder {
					vs[j] = "Basic " + base64.StdEncoding.EncodeToString([]byte(s.BasicAuthUser+":"+s.Value))
					done = true
				}
			}
			if done {
				names = append(names, s.Name)
			}
			continue
		}
		t, err := ParseHeaderTemplate(s.Header)
		if err != nil {
			continue
		}
		vs := h[t.Name] // canonical key: edit in place
		done := false
		for j, v := range vs {
			if v == t.Prefix+s.Placeholder+t.Suffix {
				vs[j] = t.Prefix + s.Value + t.Suffix
				done = true
			}
		}
		if done {
			names = append(names, s.Name)
		}
	}
	return names
}
