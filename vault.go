package podbot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/gitcred"
	"github.com/podbot/podbot/launchplan"
)

// In-sandbox paths of the vault's trust material. Only certificates go
// there: the CA's key and the real values stay with the proxy.
const (
	// VaultTrustDir is where the sandbox's trust directory (a host
	// directory, egressnet.Dirs.Trust) is mounted read-only.
	VaultTrustDir = "/etc/podbot"
	// VaultCAPath is the sandbox CA's certificate (PEM), for
	// NODE_EXTRA_CA_CERTS.
	VaultCAPath = VaultTrustDir + "/" + egressnet.TrustCAFile
	// VaultBundlePath is the image's system bundle followed by the sandbox
	// CA, for SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE and
	// GIT_SSL_CAINFO.
	VaultBundlePath = VaultTrustDir + "/" + egressnet.TrustBundleFile
	// SystemCABundle is the image's bundle the sandbox bundle starts from.
	SystemCABundle = "/etc/ssl/certs/ca-certificates.crt"
)

// Bounds on what the vault reads.
const (
	// maxSecretFileBytes bounds a file: secret source.
	maxSecretFileBytes = egress.MaxSecretValueBytes
	// maxSystemBundleBytes bounds the image's system CA bundle.
	maxSystemBundleBytes = 4 << 20
)

// vault is the credential vault of one launch: the secrets with their real
// values, and the sandbox CA. It lives in memory and in the proxy's vault
// directory, never in the plan.
type vault struct {
	secrets []egress.Secret
	// envs maps a secret's name to the variable that holds its placeholder
	// in the sandbox ("" for none).
	envs map[string]string
	ca   *egress.CA
}

// VaultIndexEntry names one secret of a sandbox's vault and where it may be
// sent, for podbot network show. It never holds a value or a placeholder.
type VaultIndexEntry struct {
	// Name is the secret's name.
	Name string `json:"name"`
	// Hosts are its host rules.
	Hosts []string `json:"hosts"`
	// Env is the sandbox variable holding its placeholder, if any.
	Env string `json:"env,omitempty"`
}

// LabelGitHubVault, on a sandbox whose installation token is in the
// credential vault, names the github-app secret; podbot token-daemon then
// refreshes the proxy's secrets file, and the token file holds the
// secret's placeholder.
const LabelGitHubVault = "podbot.github_vault"

// GitHubTokenUser is the user name git in a sandbox sends with the
// installation token (podbot's askpass answers it); a github-app secret's
// basic_auth_user must be this.
const GitHubTokenUser = config.GitHubTokenUser

// githubSecret returns the index of the [[secrets]] entry whose source is
// github-app, or -1. More than one is refused, naming the second.
func githubSecret(secrets []config.Secret) (int, error) {
	found := -1
	for i, s := range secrets {
		if s.Source != config.SecretSourceGitHubApp {
			continue
		}
		if found >= 0 {
			return -1, &errdefs.ConfigError{Key: fmt.Sprintf("%s[%d].source", config.SecretsKey, i), Reason: errdefs.ErrConflict,
				Msg: fmt.Sprintf("secret %q is the second github-app secret (%s[%d] is the first); one sandbox has one installation token", s.Name, config.SecretsKey, found)}
		}
		found = i
	}
	return found, nil
}

// checkGitHubSecret checks that the github-app secret secrets[i] can carry
// the installation token to origin: git answers with basic
// authentication as GitHubTokenUser, and the secret's hosts must cover
// the clone origin's host and port, or the proxy would send git's
// placeholder there unreplaced.
func checkGitHubSecret(i int, s config.Secret, origin gitcred.Origin) error {
	key := func(field string) string { return fmt.Sprintf("%s[%d].%s", config.SecretsKey, i, field) }
	if s.BasicAuthUser != GitHubTokenUser {
		return &errdefs.ConfigError{Key: key("basic_auth_user"), Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("secret %q (source github-app) is the password git sends as %q; set basic_auth_user = %q (and no header)", s.Name, GitHubTokenUser, GitHubTokenUser)}
	}
	host, port, err := egress.SplitHostPort(net.JoinHostPort(strings.Trim(origin.Host, "[]"), originPort(origin)), 0)
	if err != nil {
		return &errdefs.ConfigError{Key: "github.clone_base_url", Reason: errdefs.ErrInvalidValue, Msg: err.Error()}
	}
	for _, h := range s.Hosts {
		r, err := egress.ParseRule(h)
		if err != nil {
			return &errdefs.ConfigError{Key: key("hosts"), Reason: errdefs.ErrInvalidValue, Msg: err.Error()}
		}
		if r.Matches(host, port) {
			return nil
		}
	}
	return &errdefs.ConfigError{Key: key("hosts"), Reason: errdefs.ErrInvalidValue,
		Msg: fmt.Sprintf("secret %q (source github-app) does not name the clone origin %s (github.clone_base_url); add %q to its hosts", s.Name, origin, net.JoinHostPort(strings.Trim(origin.Host, "[]"), strconv.Itoa(port)))}
}

// originPort is origin's port, with the scheme's default when it names
// none.
func originPort(o gitcred.Origin) string {
	switch {
	case o.Port != "":
		return o.Port
	case o.Scheme == "http":
		return "80"
	}
	return "443"
}

// vaultToken is the credential vault's end of the GitHub token: the token
// daemon hands it each installation token it mints. Until the proxy's
// vault directory exists it only keeps the value (the launch writes it
// with the other secrets); from then on it rewrites the proxy's secrets
// file, which the proxy reloads.
type vaultToken struct {
	mu    sync.Mutex
	name  string // the github-app secret's name
	path  string // the proxy's secrets file; "" until it is written
	value string
}

// SetToken puts value in the vault (tokendaemon.TokenVault).
func (t *vaultToken) SetToken(_ context.Context, value string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.path != "" {
		if err := setSecretValue(t.path, t.name, value); err != nil {
			return err
		}
	}
	t.value = value
	return nil
}

// current is the last value the vault was given.
func (t *vaultToken) current() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.value
}

// attach makes later tokens rewrite the secrets file at path.
func (t *vaultToken) attach(path string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.path = path
}

// setSecretValue replaces the value of the secret called name in the
// proxy's secrets file at path, atomically, keeping every other secret
// and the file's owner (the proxy's user when this process is root).
func setSecretValue(path, name, value string) error {
	ss, err := egress.ReadSecretsFile(path)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(ss, func(s egress.Secret) bool { return s.Name == name })
	if i < 0 {
		return &errdefs.FilesystemError{Op: "update egress secrets", Path: path, Reason: errdefs.ErrNotFound,
			Msg: fmt.Sprintf("the secrets file holds no secret %q", name)}
	}
	ss[i].Value = value
	if err := egress.WriteSecretsFile(path, ss); err != nil {
		return err
	}
	return chownToProxy(path)
}

// secretPlaceholder reads the placeholder of the secret called name from
// the proxy's secrets file at path.
func secretPlaceholder(path, name string) (string, error) {
	ss, err := egress.ReadSecretsFile(path)
	if err != nil {
		return "", err
	}
	for _, s := range ss {
		if s.Name == name {
			return s.Placeholder, nil
		}
	}
	return "", &errdefs.FilesystemError{Op: "read egress secrets", Path: path, Reason: errdefs.ErrNotFound,
		Msg: fmt.Sprintf("the secrets file holds no secret %q", name)}
}

// chownToProxy gives a vault file to the proxy's user when this process is
// root; otherwise the file stays this user's (rootless engines map it).
func chownToProxy(p string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	if err := os.Chown(p, egressnet.ProxyUser, egressnet.ProxyUser); err != nil {
		return &errdefs.FilesystemError{Op: "chown", Path: p, Msg: "cannot give the vault file to the proxy's user", Err: err}
	}
	return nil
}

// ghToken is the installation token's place in a new vault.
type ghToken struct {
	placeholder, value string
}

// resolveSecretValue reads the real value of secrets[i] from its source:
// env:VAR from environ, file:PATH from a regular host file of at most
// egress.MaxSecretValueBytes with its trailing newline trimmed. Errors are
// *errdefs.ConfigError naming secrets[i].source and never hold the value.
func resolveSecretValue(i int, s config.Secret, environ []string) (string, error) {
	key := fmt.Sprintf("%s[%d].source", config.SecretsKey, i)
	bad := func(reason error, msg string, err error) error {
		return &errdefs.ConfigError{Key: key, Reason: reason, Msg: msg, Err: err}
	}
	switch {
	case strings.HasPrefix(s.Source, config.SecretSourceEnv):
		name := strings.TrimPrefix(s.Source, config.SecretSourceEnv)
		val, ok := "", false
		for _, kv := range environ {
			if k, v, found := strings.Cut(kv, "="); found && k == name {
				val, ok = v, true // the last one wins, as in a shell
			}
		}
		if !ok || val == "" {
			return "", bad(errdefs.ErrMissingRequired, fmt.Sprintf("secret %q: the host variable %s is not set (or empty)", s.Name, name), nil)
		}
		return val, nil
	case strings.HasPrefix(s.Source, config.SecretSourceFile):
		p := strings.TrimPrefix(s.Source, config.SecretSourceFile)
		f, err := os.Open(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", bad(errdefs.ErrMissingRequired, fmt.Sprintf("secret %q: %s does not exist", s.Name, p), err)
			}
			return "", bad(errdefs.ErrInvalidValue, fmt.Sprintf("secret %q: cannot open %s", s.Name, p), err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return "", bad(errdefs.ErrInvalidValue, fmt.Sprintf("secret %q: cannot read %s", s.Name, p), err)
		}
		if !st.Mode().IsRegular() {
			return "", bad(errdefs.ErrInvalidValue, fmt.Sprintf("secret %q: %s is not a regular file", s.Name, p), nil)
		}
		data, err := io.ReadAll(io.LimitReader(f, maxSecretFileBytes+2))
		if err != nil {
			return "", bad(errdefs.ErrInvalidValue, fmt.Sprintf("secret %q: cannot read %s", s.Name, p), err)
		}
		v := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
		if len(v) > maxSecretFileBytes {
			return "", bad(errdefs.ErrInvalidValue, fmt.Sprintf("secret %q: %s holds more than %d bytes", s.Name, p, maxSecretFileBytes), nil)
		}
		if v == "" {
			return "", bad(errdefs.ErrInvalidValue, fmt.Sprintf("secret %q: %s is empty", s.Name, p), nil)
		}
		return v, nil
	}
	return "", bad(errdefs.ErrUnsupported, fmt.Sprintf("secret %q: source %q is not one this podbot applies (env:VAR, file:PATH)", s.Name, s.Source), nil)
}

// implicitSecret is one secret of the vault with its value: a [[secrets]]
// entry's (key "secrets[i]", errors naming a field below it), or one podbot
// adds on its own (the API key of an uploaded ~/.codex/auth.json, key the
// config key that controls it). placeholder is set when the secret's
// placeholder is fixed already (the GitHub token's, which the token
// directory holds); empty means a fresh one.
type implicitSecret struct {
	key         string
	secret      config.Secret
	value       string
	placeholder string
	// exact makes errors name key itself rather than a field below it.
	exact bool
}

// keyOf names field of the secret in errors.
func (is implicitSecret) keyOf(field string) string {
	if is.exact {
		return is.key
	}
	return is.key + "." + field
}

// newVault resolves every [[secrets]] entry (a github-app one takes gh's
// token and placeholder), adds the implicit secrets, gives each without a
// placeholder a fresh one and makes the sandbox CA (named after sandbox,
// constrained to the secrets' hosts). Errors name the key and never hold a
// value.
func newVault(sandbox string, secrets []config.Secret, environ []string, gh *ghToken, implicit ...implicitSecret) (*vault, error) {
	all := make([]implicitSecret, 0, len(secrets)+len(implicit))
	for i, s := range secrets {
		is := implicitSecret{key: fmt.Sprintf("%s[%d]", config.SecretsKey, i), secret: s}
		if s.Source == config.SecretSourceGitHubApp {
			if gh == nil {
				return nil, &errdefs.ConfigError{Key: is.keyOf("source"), Reason: errdefs.ErrMissingRequired,
					Msg: fmt.Sprintf("secret %q: no installation token was minted for this sandbox (it needs a GitHub App and a github_clone workspace)", s.Name)}
			}
			is.value, is.placeholder = gh.value, gh.placeholder
		} else {
			val, err := resolveSecretValue(i, s, environ)
			if err != nil {
				return nil, err
			}
			is.value = val
		}
		all = append(all, is)
	}
	all = append(all, implicit...)
	v := &vault{envs: map[string]string{}}
	var hosts []egress.Rule
	for _, is := range all {
		s := is.secret
		es := egress.Secret{Name: s.Name, Header: s.Header, BasicAuthUser: s.BasicAuthUser, Value: is.value, Placeholder: is.placeholder}
		for _, h := range s.Hosts {
			r, err := egress.ParseRule(h)
			if err != nil {
				return nil, &errdefs.ConfigError{Key: is.keyOf("hosts"), Reason: errdefs.ErrInvalidValue, Msg: err.Error()}
			}
			es.Hosts = append(es.Hosts, r)
			hosts = append(hosts, r)
		}
		if es.Placeholder == "" {
			var err error
			if es.Placeholder, err = egress.NewPlaceholder(s.Name); err != nil {
				return nil, &errdefs.ConfigError{Key: is.keyOf("name"), Reason: errdefs.ErrInvalidValue, Msg: err.Error()}
			}
		}
		if err := egress.ValidateSecret(es); err != nil {
			var se *egress.SecretError
			field := "source"
			if errors.As(err, &se) && se.Field != "value" && se.Field != "placeholder" {
				field = se.Field
			}
			return nil, &errdefs.ConfigError{Key: is.keyOf(field), Reason: errdefs.ErrInvalidValue, Msg: err.Error()}
		}
		v.secrets = append(v.secrets, es)
		v.envs[s.Name] = s.Env
	}
	ca, err := egress.NewCA("podbot sandbox "+sandbox, hosts...)
	if err != nil {
		return nil, err
	}
	v.ca = ca
	return v, nil
}

// placeholder returns the placeholder of the secret name ("" for none).
func (v *vault) placeholder(name string) string {
	for _, s := range v.secrets {
		if s.Name == name {
			return s.Placeholder
		}
	}
	return ""
}

// values are the real values, for the redactor.
func (v *vault) values() []string {
	out := make([]string, 0, len(v.secrets))
	for _, s := range v.secrets {
		out = append(out, s.Value)
	}
	return out
}

// index lists the secrets' names, hosts and variables, without values or
// placeholders.
func (v *vault) index() []VaultIndexEntry {
	out := make([]VaultIndexEntry, 0, len(v.secrets))
	for _, s := range v.secrets {
		e := VaultIndexEntry{Name: s.Name, Env: v.envs[s.Name], Hosts: []string{}}
		for _, h := range s.Hosts {
			e.Hosts = append(e.Hosts, h.String())
		}
		out = append(out, e)
	}
	return out
}

// VaultTrustEnv is the container environment that points TLS clients in a
// vault sandbox at the bundle that trusts the sandbox CA.
func VaultTrustEnv() []string {
	return []string{
		"SSL_CERT_FILE=" + VaultBundlePath,
		"REQUESTS_CA_BUNDLE=" + VaultBundlePath,
		"CURL_CA_BUNDLE=" + VaultBundlePath,
		"GIT_SSL_CAINFO=" + VaultBundlePath,
		"NODE_EXTRA_CA_CERTS=" + VaultCAPath,
	}
}

// applyVault gives the plan its vault: each secret's variable holds its
// placeholder and the trust variables point at the CA files (Plan.Env: no
// secret there), and agent variables that would carry a real value (a
// secret's variable, or any variable whose value is a secret's) are
// dropped from AgentEnv. It returns the names it dropped and labels the
// plan with the vault's index. The CA files come from a host directory
// mounted read-only (prepareEgress), so a read-only root filesystem is
// fine.
func applyVault(plan *launchplan.Plan, v *vault) ([]string, error) {
	envs := map[string]bool{}
	values := map[string]bool{}
	for _, s := range v.secrets {
		values[s.Value] = true
		if e := v.envs[s.Name]; e != "" {
			envs[e] = true
			plan.Env = slices.DeleteFunc(plan.Env, func(kv string) bool { k, _, _ := strings.Cut(kv, "="); return k == e })
			plan.Env = append(plan.Env, e+"="+s.Placeholder)
		}
	}
	plan.Env = append(plan.Env, VaultTrustEnv()...)
	var dropped []string
	plan.AgentEnv = slices.DeleteFunc(plan.AgentEnv, func(kv string) bool {
		k, val, _ := strings.Cut(kv, "=")
		if envs[k] || values[val] {
			dropped = append(dropped, k)
			return true
		}
		return false
	})
	idx, err := json.Marshal(v.index())
	if err != nil {
		return nil, err
	}
	if plan.Labels == nil {
		plan.Labels = map[string]string{}
	}
	plan.Labels[egressnet.LabelSecrets] = string(idx)
	return dropped, nil
}

// writeVault writes the vault's files into the proxy's vault directory:
// the secrets (0600), the CA certificate (0644) and key (0600). When this
// process is root they are given to the proxy's user, the only one that
// may read them; the directory is never mounted into the sandbox.
func writeVault(d egressnet.Dirs, v *vault) error {
	if err := egress.WriteSecretsFile(d.VaultPath(egressnet.SecretsFile), v.secrets); err != nil {
		return err
	}
	key, err := v.ca.KeyPEM()
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{{egressnet.CACertFile, v.ca.CertPEM(), 0o644}, {egressnet.CAKeyFile, key, 0o600}} {
		p := d.VaultPath(f.name)
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return &errdefs.FilesystemError{Op: "write", Path: p, Msg: "cannot write the sandbox CA", Err: err}
		}
		if err := os.Chmod(p, f.mode); err != nil {
			return &errdefs.FilesystemError{Op: "chmod", Path: p, Msg: "cannot write the sandbox CA", Err: err}
		}
	}
	for _, name := range []string{egressnet.SecretsFile, egressnet.CACertFile, egressnet.CAKeyFile} {
		if err := chownToProxy(d.VaultPath(name)); err != nil {
			return err
		}
	}
	return nil
}

// caBundle is the sandbox's CA bundle: the image's system bundle (when it
// has one) followed by the sandbox CA.
func caBundle(system, ca []byte) []byte {
	var b bytes.Buffer
	b.Write(system)
	if len(system) > 0 && !bytes.HasSuffix(system, []byte("\n")) {
		b.WriteByte('\n')
	}
	b.Write(ca)
	return b.Bytes()
}

// installVaultTrust writes the sandbox CA (certificate only) and the bundle
// into the sandbox's trust directory on the host (d.Trust, mounted
// read-only at VaultTrustDir), each atomically, mode 0644. The image's
// system bundle is read from the created sandbox through the engine's copy
// API, bounded; an image without one gets a bundle of the CA alone. Nothing
// is written into the container, so its root filesystem may be read-only.
func installVaultTrust(ctx context.Context, conn *engine.Conn, id string, d egressnet.Dirs, caPEM []byte) (systemBundle bool, err error) {
	system, err := conn.ReadFile(ctx, id, SystemCABundle, maxSystemBundleBytes)
	if err != nil {
		if !errors.Is(err, errdefs.ErrNotFound) {
			return false, err
		}
		system = nil
	}
	if err := d.WriteTrust(egressnet.TrustCAFile, caPEM); err != nil {
		return false, err
	}
	if err := d.WriteTrust(egressnet.TrustBundleFile, caBundle(system, caPEM)); err != nil {
		return false, err
	}
	return system != nil, nil
}
