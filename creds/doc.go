// Package creds decides which credentials reach an agent container and keeps
// secret values out of logs.
//
// It builds the one tar archive that carries the agent's own login
// directories (~/.claude, ~/.codex) into the container (Build), selects the
// host environment variables an agent may see (Passthrough), masks secret
// values in every log record (Redactor, NewRedactingHandler), and reads the
// host's git identity for the container (GitIdentity, GitConfigFile, GitConfigEnv).
//
// creds never talks to the container engine: callers upload the archive and
// run the git commands through the engine package.
package creds
