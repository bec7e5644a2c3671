package podbot

import (
	"fmt"
	"strings"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/errdefs"
)

// The implicit vault secret that holds the API key of an uploaded
// ~/.codex/auth.json (creds.vault_codex_key).
const (
	// CodexSecretName names it in the vault, the decision log and
	// podbot network show; a [[secrets]] entry may not take this name while
	// it applies.
	CodexSecretName = "codex-openai"
	// CodexSecretHeader is where the proxy puts the key.
	CodexSecretHeader = "Authorization: Bearer {}"
	// CodexAPIHost is OpenAI's API, always among its hosts.
	CodexAPIHost = "api.openai.com"
	// codexVaultKey is the config key that turns it off.
	codexVaultKey = "creds.vault_codex_key"
)

// codexVault is the plan to move the API key of ~/.codex/auth.json into
// the vault: the file as read once, and the implicit secret.
type codexVault struct {
	auth   *creds.CodexAuth
	secret implicitSecret
	// warnings are for the launch's progress (never hold the key).
	warnings []string
}

// prepareCodexVault decides whether the API key of the host's
// ~/.codex/auth.json moves into the vault: in allowlist mode, with
// creds.copy_codex and creds.vault_codex_key on, when the file holds a
// non-empty OPENAI_API_KEY. It returns nil when it does not apply. The
// secret's hosts are api.openai.com and the host of openai_base_url in
// ~/.codex/config.toml, if any (a config.toml podbot cannot read or parse
// is a warning: the key then goes to api.openai.com only). An auth.json
// that cannot be read or parsed is refused: uploaded unchanged it would put
// the key it may hold into the sandbox.
func prepareCodexVault(opts LaunchOptions, mode egress.Mode) (*codexVault, error) {
	c := opts.Config.Creds
	if mode != egress.ModeAllowlist || !c.CopyCodex || !c.VaultCodexKey || opts.HostHome == "" {
		return nil, nil
	}
	if out, err := creds.Excluded(c.Exclude, creds.CodexAuthName); err != nil || out {
		return nil, err // nothing uploaded: nothing to keep out
	}
	auth, err := creds.ReadCodexAuth(opts.HostHome)
	if err != nil {
		return nil, &errdefs.ConfigError{Key: codexVaultKey, Reason: errdefs.ErrInvalidValue,
			Msg: "cannot move the Codex API key into the credential vault; fix the file, add \".codex/auth.json\" to creds.exclude, or set " +
				codexVaultKey + " = false (the real key then enters the sandbox)", Err: err}
	}
	if auth == nil || auth.APIKey == "" {
		return nil, nil
	}
	for i, s := range opts.Config.Secrets {
		if s.Name == CodexSecretName {
			return nil, &errdefs.ConfigError{Key: fmt.Sprintf("%s[%d].name", config.SecretsKey, i), Reason: errdefs.ErrConflict,
				Msg: fmt.Sprintf("the name %q is podbot's for the API key of ~/.codex/auth.json (%s); rename this secret or set %s = false", CodexSecretName, codexVaultKey, codexVaultKey)}
		}
	}
	cv := &codexVault{auth: auth}
	hosts := []string{CodexAPIHost}
	base, err := creds.CodexBaseURLHost(opts.HostHome)
	switch {
	case err != nil:
		cv.warnings = append(cv.warnings, fmt.Sprintf("%v; the vault sends the Codex API key to %s only", err, CodexAPIHost))
	case base != "" && base != CodexAPIHost && base != CodexAPIHost+":443":
		hosts = append(hosts, base)
	}
	cv.secret = implicitSecret{key: codexVaultKey, exact: true, value: auth.APIKey,
		secret: config.Secret{Name: CodexSecretName, Hosts: hosts, Header: CodexSecretHeader}}
	return cv, nil
}

// hosts lists the secret's hosts, for progress.
func (cv *codexVault) hosts() string { return strings.Join(cv.secret.secret.Hosts, ", ") }
