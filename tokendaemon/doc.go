// Package tokendaemon keeps a fresh GitHub App installation token in a file
// that a container sees read-only.
//
// For each container it owns one directory, $XDG_RUNTIME_DIR/podbot/<id>/
// (mode 0700), holding ghapp_token (mode 0600). The token is replaced
// atomically (temporary file in the same directory, fsync, rename, fsync of
// the directory) a buffer before it expires; failures are retried with
// exponential backoff and jitter. When the container stops or is gone the
// directory is removed and the daemon stops: no token stays on disk for a
// container that is not running. Starting the container again needs the
// directory back first (it is the source of a bind mount): EnsureDir makes
// an empty one, Prepare one with a fresh token.
//
// Mount the directory, not the file, into the container (at
// ContainerSecretsDir, read-only): a bind-mounted file keeps pointing at the
// inode it was mounted with, so a renamed-in replacement would never be seen.
// Inside the container the token is then ContainerTokenPath, which git's
// askpass program (podbot-sidecar, which answers only for the clone origin)
// reads at every git prompt. The image's own helper (AskpassScript) only
// hands git's prompt on to that sidecar and answers nothing by itself.
//
// In vault mode (Options.Vault) the real token never reaches the
// directory: each token minted goes to the TokenVault (podbot's egress
// proxy's secrets file), and ghapp_token holds the vault's placeholder,
// which never changes. git in the container then answers with the
// placeholder, and the proxy puts the real token in its place on the way
// to the secret's hosts. The placeholder is written only after the vault
// holds a value.
//
// The package knows containers only by id: callers say which containers
// need tokens and whether one is still alive. Token values never appear in
// logs, errors, argv or the environment.
package tokendaemon
