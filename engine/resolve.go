package engine

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// Source labels returned by Resolve: where the endpoint came from.
const (
	SourceFlag           = "--engine-socket flag"
	SourcePodbotEnv      = "PODBOT_ENGINE_SOCKET"
	SourceConfig         = "config file (engine_socket)"
	SourceDockerHost     = "DOCKER_HOST"
	SourceContainerHost  = "CONTAINER_HOST"
	SourcePodmanHost     = "PODMAN_HOST"
	SourceRootlessPodman = "rootless Podman socket"
	SourceRootfulPodman  = "rootful Podman socket"
	SourceDockerSocket   = "Docker socket"
)

// Well-known socket paths probed when nothing names an endpoint.
const (
	RootfulPodmanSocket = "/run/podman/podman.sock"
	DockerSocket        = "/var/run/docker.sock"
)

// ResolveInput holds every place an endpoint can come from, already read by
// the caller. Resolve itself reads no environment and no files except to
// probe the well-known socket paths through Exists.
type ResolveInput struct {
	// Flag is the --engine-socket value.
	Flag string
	// PodbotEnv is the PODBOT_ENGINE_SOCKET value.
	PodbotEnv string
	// ConfigValue is engine_socket from the config file.
	ConfigValue string
	// Environ is the process environment as KEY=VALUE pairs; Resolve reads
	// DOCKER_HOST, CONTAINER_HOST, PODMAN_HOST and XDG_RUNTIME_DIR from it.
	Environ []string
	// Exists reports whether a socket path exists. Nil means a stat that
	// accepts only sockets.
	Exists func(path string) bool
}

// Resolve picks the engine endpoint by precedence: flag >
// PODBOT_ENGINE_SOCKET > config file > DOCKER_HOST > CONTAINER_HOST >
// PODMAN_HOST > the first existing socket among rootless Podman
// ($XDG_RUNTIME_DIR/podman/podman.sock), rootful Podman
// (/run/podman/podman.sock) and Docker (/var/run/docker.sock). Empty values
// are skipped; a malformed value is an error, not a reason to fall through.
// It returns the endpoint and a label naming its source (one of the Source
// constants).
func Resolve(in ResolveInput) (Endpoint, string, error) {
	explicit := []struct{ label, value string }{
		{SourceFlag, in.Flag},
		{SourcePodbotEnv, in.PodbotEnv},
		{SourceConfig, in.ConfigValue},
		{SourceDockerHost, lookupEnv(in.Environ, "DOCKER_HOST")},
		{SourceContainerHost, lookupEnv(in.Environ, "CONTAINER_HOST")},
		{SourcePodmanHost, lookupEnv(in.Environ, "PODMAN_HOST")},
	}
	for _, c := range explicit {
		if strings.TrimSpace(c.value) == "" {
			continue
		}
		ep, err := ParseEndpoint(c.value)
		if err != nil {
			if ce, ok := err.(*errdefs.ConfigError); ok {
				ce.Source = c.label
			}
			return Endpoint{}, "", err
		}
		return ep, c.label, nil
	}

	exists := in.Exists
	if exists == nil {
		exists = isSocket
	}
	var probes []struct{ label, path string }
	if xdg := lookupEnv(in.Environ, "XDG_RUNTIME_DIR"); filepath.IsAbs(xdg) {
		probes = append(probes, struct{ label, path string }{SourceRootlessPodman, filepath.Join(xdg, "podman", "podman.sock")})
	}
	probes = append(probes,
		struct{ label, path string }{SourceRootfulPodman, RootfulPodmanSocket},
		struct{ label, path string }{SourceDockerSocket, DockerSocket},
	)
	tried := make([]string, 0, len(probes))
	for _, p := range probes {
		if exists(p.path) {
			return Endpoint{Scheme: SchemeUnix, Address: p.path, Raw: p.path}, p.label, nil
		}
		tried = append(tried, p.path)
	}
	return Endpoint{}, "", &errdefs.ContainerError{
		Op:     "resolve engine endpoint",
		Reason: errdefs.ErrSocketNotFound,
		Msg: "no engine endpoint is configured (--engine-socket, PODBOT_ENGINE_SOCKET, engine_socket in the config file, " +
			"DOCKER_HOST, CONTAINER_HOST, PODMAN_HOST are all empty) and no socket exists at " + strings.Join(tried, ", "),
		Hint: "start an engine (e.g. `podman system service --time=0 unix:///run/podman/podman.sock &`) or point podbot at one with --engine-socket or PODBOT_ENGINE_SOCKET",
	}
}

// lookupEnv returns the first KEY=VALUE entry for key, as os.Getenv does.
func lookupEnv(environ []string, key string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

func isSocket(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&fs.ModeSocket != 0
}
