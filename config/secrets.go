package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/errdefs"
)

// SecretsKey is the array of tables that declares the credential vault's
// secrets ([[secrets]] in the config file). It is not in the key table:
// it has no environment variable or flag form, only the file's.
const SecretsKey = "secrets"

// Secret sources (the source of a [[secrets]] entry).
const (
	// SecretSourceEnv prefixes a host environment variable: "env:VAR".
	SecretSourceEnv = "env:"
	// SecretSourceFile prefixes an absolute host file path: "file:PATH".
	SecretSourceFile = "file:"
	// SecretSourceGitHubApp is the GitHub App installation token.
	SecretSourceGitHubApp = "github-app"
	// GitHubTokenUser is the basic-auth user git sends the installation
	// token with; a github-app secret's basic_auth_user must be it.
	GitHubTokenUser = "x-access-token"
)

// Secret is one [[secrets]] entry: a credential that the sandbox only
// knows by a placeholder and that podbot's egress proxy puts into requests
// to its hosts. It holds where the value is read from, never the value.
type Secret struct {
	// Name names the secret: unique, 1-64 characters of a-z, 0-9, '_', '-'.
	Name string
	// Source is where the value comes from: "env:VAR" (a host environment
	// variable), "file:PATH" (an absolute host path) or "github-app" (the
	// installation token, refreshed as it expires).
	Source string
	// Hosts are egress rules (as network.allow) for where the value may be
	// sent; at least one.
	Hosts []string
	// Header is a header template with one "{}" where the value goes:
	// "Authorization: Bearer {}", "x-api-key: {}". Exclusive with
	// BasicAuthUser.
	Header string
	// BasicAuthUser makes the value the password of HTTP basic
	// authentication as this user (git over HTTPS: "x-access-token").
	BasicAuthUser string
	// Env is the variable inside the sandbox that holds the placeholder;
	// empty sets none.
	Env string
}

// secretFields are the keys a [[secrets]] table may hold.
var secretFields = []string{"name", "source", "hosts", "header", "basic_auth_user", "env"}

// secretKey names field of the i-th [[secrets]] entry, as errors show it.
func secretKey(i int, field string) string {
	k := fmt.Sprintf("%s[%d]", SecretsKey, i)
	if field != "" {
		k += "." + field
	}
	return k
}

// decodeSecrets converts the decoded [[secrets]] array of tables, refusing
// anything but tables of the known keys with string values (hosts: an
// array of strings). src gives the source of a key, with its line.
func decodeSecrets(v any, src func(key string) string) ([]Secret, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, &errdefs.ConfigError{Key: SecretsKey, Source: src(SecretsKey), Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("got %s; declare each secret as a [[secrets]] table", tomlKind(v))}
	}
	if len(arr) > egress.MaxSecrets {
		return nil, &errdefs.ConfigError{Key: SecretsKey, Source: src(SecretsKey), Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("%d secrets; at most %d are allowed", len(arr), egress.MaxSecrets)}
	}
	out := make([]Secret, 0, len(arr))
	for i, item := range arr {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, &errdefs.ConfigError{Key: secretKey(i, ""), Source: src(secretKey(i, "")), Reason: errdefs.ErrInvalidValue,
				Msg: fmt.Sprintf("got %s; declare each secret as a [[secrets]] table", tomlKind(item))}
		}
		var s Secret
		for _, f := range slices.Sorted(func(yield func(string) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		}) {
			key := secretKey(i, f)
			bad := func(reason error, format string, a ...any) error {
				return &errdefs.ConfigError{Key: key, Source: src(key), Reason: reason, Msg: fmt.Sprintf(format, a...)}
			}
			if f == "hosts" {
				l, err := fromTOML(TypeList, m[f])
				if err != nil {
					return nil, bad(errdefs.ErrInvalidValue, "%s", err)
				}
				s.Hosts = l.([]string)
				continue
			}
			if !slices.Contains(secretFields, f) {
				return nil, bad(errdefs.ErrUnknownKey, "unknown key %q in a [[secrets]] table; expected %s", f, strings.Join(secretFields, ", "))
			}
			str, ok := m[f].(string)
			if !ok {
				return nil, bad(errdefs.ErrInvalidValue, "got %s; expected a string (in quotes)", tomlKind(m[f]))
			}
			switch f {
			case "name":
				s.Name = str
			case "source":
				s.Source = str
			case "header":
				s.Header = str
			case "basic_auth_user":
				s.BasicAuthUser = str
			case "env":
				s.Env = str
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// validateSecrets checks every [[secrets]] entry, one error per key, and
// that secrets are not combined with network.mode = "open" (the vault
// needs the egress proxy).
func (c Config) validateSecrets(v *validator) {
	if len(c.Secrets) == 0 {
		return
	}
	if c.Network.Mode == NetworkOpen {
		v.add("network.mode", errdefs.ErrConflict,
			"%q has no egress proxy, so the %d [[secrets]] entries could not be kept out of the sandbox; use network.mode = \"allowlist\" or remove the secrets",
			NetworkOpen, len(c.Secrets))
	}
	names := map[string]int{}
	envs := map[string]int{}
	for i, s := range c.Secrets {
		nth := fmt.Sprintf("(the [[secrets]] entry number %d)", i+1)
		switch {
		case s.Name == "":
			v.add(secretKey(i, "name"), errdefs.ErrMissingRequired, "missing %s; every secret needs a name", nth)
		case !egress.ValidName(s.Name):
			v.add(secretKey(i, "name"), errdefs.ErrInvalidValue, "got %q %s; use 1-64 characters of a-z, 0-9, '_' and '-'", s.Name, nth)
		default:
			if j, dup := names[s.Name]; dup {
				v.add(secretKey(i, "name"), errdefs.ErrConflict, "%q is also the name of %s; names must be unique", s.Name, secretKey(j, ""))
			} else {
				names[s.Name] = i
			}
		}
		switch src := s.Source; {
		case src == "":
			v.add(secretKey(i, "source"), errdefs.ErrMissingRequired, "missing %s; expected env:VAR, file:/absolute/path or github-app", nth)
		case strings.HasPrefix(src, SecretSourceEnv):
			if name := strings.TrimPrefix(src, SecretSourceEnv); !envVarRE.MatchString(name) {
				v.add(secretKey(i, "source"), errdefs.ErrInvalidValue, "got %q %s; expected env: and a variable name", src, nth)
			}
		case strings.HasPrefix(src, SecretSourceFile):
			if p := strings.TrimPrefix(src, SecretSourceFile); !filepath.IsAbs(p) || filepath.Clean(p) != p {
				v.add(secretKey(i, "source"), errdefs.ErrInvalidValue, "got %q %s; expected file: and an absolute, clean host path", src, nth)
			}
		case src == SecretSourceGitHubApp:
			if !c.GitHub.Configured() {
				v.add(secretKey(i, "source"), errdefs.ErrConflict, "%q %s needs a GitHub App (github.app_id, github.installation_id, github.private_key_path)", src, nth)
			} else if s.BasicAuthUser != GitHubTokenUser {
				v.add(secretKey(i, "basic_auth_user"), errdefs.ErrInvalidValue,
					"%q %s is the password git sends as %q; set basic_auth_user = %q and no header", src, nth, GitHubTokenUser, GitHubTokenUser)
			}
		default:
			v.add(secretKey(i, "source"), errdefs.ErrInvalidValue, "unknown source %q %s; expected env:VAR, file:/absolute/path or github-app", src, nth)
		}
		if len(s.Hosts) == 0 {
			v.add(secretKey(i, "hosts"), errdefs.ErrMissingRequired, "no hosts %s; a secret needs at least one host it may be sent to, e.g. hosts = [\"api.anthropic.com\"]", nth)
		}
		for _, h := range s.Hosts {
			if _, err := egress.ParseRule(h); err != nil {
				v.add(secretKey(i, "hosts"), errdefs.ErrInvalidValue, "%s %s", err, nth)
				break
			}
		}
		switch {
		case s.Header != "" && s.BasicAuthUser != "":
			v.add(secretKey(i, "header"), errdefs.ErrConflict, "header and basic_auth_user are both set %s; set one", nth)
		case s.Header != "":
			if _, err := egress.ParseHeaderTemplate(s.Header); err != nil {
				v.add(secretKey(i, "header"), errdefs.ErrInvalidValue, "%q %s: %s", s.Header, nth, err)
			}
		case s.BasicAuthUser != "":
			if len(s.BasicAuthUser) > 64 || strings.Contains(s.BasicAuthUser, ":") || strings.ContainsFunc(s.BasicAuthUser, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				v.add(secretKey(i, "basic_auth_user"), errdefs.ErrInvalidValue, "got %q %s; expected a user name without ':'", s.BasicAuthUser, nth)
			}
		default:
			v.add(secretKey(i, "header"), errdefs.ErrMissingRequired,
				"missing %s; set header = \"Authorization: Bearer {}\" (or \"x-api-key: {}\"), or basic_auth_user = \"x-access-token\" for git over HTTPS", nth)
		}
		if s.Env != "" {
			switch {
			case !envVarRE.MatchString(s.Env):
				v.add(secretKey(i, "env"), errdefs.ErrInvalidValue, "got %q %s; expected a variable name", s.Env, nth)
			case strings.HasPrefix(strings.ToUpper(s.Env), envPrefix):
				v.add(secretKey(i, "env"), errdefs.ErrInvalidValue, "%q %s: PODBOT_ variables are podbot's own", s.Env, nth)
			default:
				if j, dup := envs[s.Env]; dup {
					v.add(secretKey(i, "env"), errdefs.ErrConflict, "%q is also the env of %s", s.Env, secretKey(j, ""))
				} else {
					envs[s.Env] = i
				}
			}
		}
	}
}
