// Package config defines podbot's configuration and loads it in layers.
//
// The layers, lowest first, are: built-in defaults, one TOML file, PODBOT_*
// environment variables, and command-line flags. Each dotted key
// (for example "sandbox.privileged") is resolved on its own, so a file that
// sets one key of a section leaves the section's other keys at their
// defaults, and an environment variable overrides exactly one key.
//
// The file is the first that exists of: LoadOptions.ConfigPath (--config),
// PODBOT_CONFIG_PATH, $XDG_CONFIG_HOME/podbot/config.toml,
// ~/.config/podbot/config.toml and /etc/podbot/config.toml. The current
// directory is never searched: an untrusted checkout must not be able to
// configure the sandbox it is about to run in.
//
// Load never reads the process environment or the home directory on its own;
// callers pass them in LoadOptions, which keeps loading deterministic and
// testable. Every problem is an *errdefs.ConfigError naming the key, where the
// value came from and what was expected.
package config
