package creds

import (
	"fmt"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// isEngineVariable reports variables that point a client at a container
// engine. Passing one into a container could lead the agent to the host
// engine, so they are refused.
func isEngineVariable(name string) bool {
	switch name {
	case "DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY",
		"CONTAINER_HOST", "CONTAINER_CONNECTION", "CONTAINER_SSHKEY":
		return true
	}
	return false
}

// Passthrough selects the host environment variables an agent may see.
//
// allowlist (agent.env_allowlist) names the variables to copy; required
// (agent.env_required) names variables that must be set, and are copied
// even when the allowlist omits them. environ is the host environment in
// os.Environ form; when a name occurs twice the first occurrence wins, as
// with os.Getenv.
//
// It returns the "NAME=value" entries in allowlist order followed by the
// required-only names, and the values to register with a Redactor. A missing
// allowlisted variable is skipped; a missing required one is an
// *errdefs.ConfigError (errdefs.ErrMissingRequired) naming it. Invalid names
// and engine connection variables (DOCKER_HOST, CONTAINER_HOST, ...) are
// refused. No value appears in any error.
func Passthrough(allowlist, required []string, environ []string) (env []string, secrets []string, err error) {
	host := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if _, seen := host[k]; !seen {
			host[k] = v
		}
	}
	isRequired := make(map[string]bool, len(required))
	for _, name := range required {
		if err := checkName("agent.env_required", name); err != nil {
			return nil, nil, err
		}
		isRequired[name] = true
	}
	names := make([]string, 0, len(allowlist)+len(required))
	listed := make(map[string]bool, len(allowlist)+len(required))
	for _, name := range allowlist {
		if err := checkName("agent.env_allowlist", name); err != nil {
			return nil, nil, err
		}
		if !listed[name] {
			listed[name] = true
			names = append(names, name)
		}
	}
	for _, name := range required {
		if !listed[name] {
			listed[name] = true
			names = append(names, name)
		}
	}
	for _, name := range names {
		v, ok := host[name]
		if !ok {
			if isRequired[name] {
				return nil, nil, &errdefs.ConfigError{Key: "agent.env_required", Source: "environment", Reason: errdefs.ErrMissingRequired,
					Msg: fmt.Sprintf("host variable %s is required but not set; export it or remove it from agent.env_required", name)}
			}
			continue
		}
		env = append(env, name+"="+v)
		if v != "" {
			secrets = append(secrets, v)
		}
	}
	return env, secrets, nil
}

// checkName accepts portable environment variable names only.
func checkName(key, name string) error {
	valid := name != "" && len(name) <= 256
	for i, c := range name {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			valid = false
		}
	}
	if !valid {
		return &errdefs.ConfigError{Key: key, Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("%q is not a valid environment variable name (letters, digits and _, not starting with a digit)", name)}
	}
	if isEngineVariable(name) {
		return &errdefs.ConfigError{Key: key, Reason: errdefs.ErrRefused,
			Msg: fmt.Sprintf("%s points clients at a container engine and is never passed to an agent", name)}
	}
	return nil
}
