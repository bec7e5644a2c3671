package engine

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestResolvePrecedence(t *testing.T) {
	env := []string{
		"DOCKER_HOST=unix:///docker-host.sock",
		"CONTAINER_HOST=unix:///container-host.sock",
		"PODMAN_HOST=unix:///podman-host.sock",
		"XDG_RUNTIME_DIR=/run/user/1000",
	}
	all := func(string) bool { return true }
	none := func(string) bool { return false }
	only := func(p string) func(string) bool { return func(q string) bool { return q == p } }
	cases := []struct {
		name       string
		in         ResolveInput
		wantAddr   string
		wantSource string
	}{
		{"flag wins", ResolveInput{Flag: "/flag.sock", PodbotEnv: "/env.sock", ConfigValue: "/cfg.sock", Environ: env, Exists: all}, "/flag.sock", SourceFlag},
		{"podbot env next", ResolveInput{PodbotEnv: "/env.sock", ConfigValue: "/cfg.sock", Environ: env, Exists: all}, "/env.sock", SourcePodbotEnv},
		{"config next", ResolveInput{ConfigValue: "/cfg.sock", Environ: env, Exists: all}, "/cfg.sock", SourceConfig},
		{"DOCKER_HOST next", ResolveInput{Environ: env, Exists: all}, "/docker-host.sock", SourceDockerHost},
		{"CONTAINER_HOST next", ResolveInput{Environ: env[1:], Exists: all}, "/container-host.sock", SourceContainerHost},
		{"PODMAN_HOST next", ResolveInput{Environ: env[2:], Exists: all}, "/podman-host.sock", SourcePodmanHost},
		{"rootless podman socket", ResolveInput{Environ: env[3:], Exists: all}, "/run/user/1000/podman/podman.sock", SourceRootlessPodman},
		{"rootful podman socket", ResolveInput{Environ: env[3:], Exists: only(RootfulPodmanSocket)}, RootfulPodmanSocket, SourceRootfulPodman},
		{"docker socket", ResolveInput{Environ: env[3:], Exists: only(DockerSocket)}, DockerSocket, SourceDockerSocket},
		{"empty values skipped", ResolveInput{Flag: "  ", PodbotEnv: "", ConfigValue: "\t", Environ: []string{"DOCKER_HOST=", "PODMAN_HOST=/p.sock"}, Exists: none}, "/p.sock", SourcePodmanHost},
		{"relative XDG_RUNTIME_DIR ignored", ResolveInput{Environ: []string{"XDG_RUNTIME_DIR=run/user"}, Exists: func(p string) bool { return p != "run/user/podman/podman.sock" }}, RootfulPodmanSocket, SourceRootfulPodman},
		{"first env entry wins", ResolveInput{Environ: []string{"DOCKER_HOST=/a.sock", "DOCKER_HOST=/b.sock"}, Exists: none}, "/a.sock", SourceDockerHost},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ep, src, err := Resolve(tc.in)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if ep.Address != tc.wantAddr || src != tc.wantSource {
				t.Errorf("got %q from %q, want %q from %q", ep.Address, src, tc.wantAddr, tc.wantSource)
			}
		})
	}
}

func TestResolveMalformedValueIsAnErrorNamingItsSource(t *testing.T) {
	_, _, err := Resolve(ResolveInput{ConfigValue: "/cfg.sock", Environ: nil, PodbotEnv: "gopher://x"})
	var ce *errdefs.ConfigError
	if !errors.As(err, &ce) || ce.Source != SourcePodbotEnv || !errors.Is(err, errdefs.ErrInvalidValue) {
		t.Fatalf("got %v, want invalid-value ConfigError from %s", err, SourcePodbotEnv)
	}
}

func TestResolveNothingFound(t *testing.T) {
	_, _, err := Resolve(ResolveInput{Environ: []string{"XDG_RUNTIME_DIR=/run/user/7"}, Exists: func(string) bool { return false }})
	if !errors.Is(err, errdefs.ErrContainer) || !errors.Is(err, errdefs.ErrSocketNotFound) {
		t.Fatalf("got %v, want socket-not-found ContainerError", err)
	}
	for _, want := range []string{"/run/user/7/podman/podman.sock", RootfulPodmanSocket, DockerSocket, "PODBOT_ENGINE_SOCKET", "--engine-socket"} {
		if !contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestResolveDefaultExistsWantsASocket(t *testing.T) {
	dir := t.TempDir()
	sockDir := filepath.Join(dir, "podman")
	if err := os.MkdirAll(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	// A regular file where the socket should be is not a socket.
	if err := os.WriteFile(filepath.Join(sockDir, "podman.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if isSocket(filepath.Join(sockDir, "podman.sock")) {
		t.Fatal("regular file taken for a socket")
	}
	f := newFakeEngine(t)
	if !isSocket(f.socket) {
		t.Fatal("listening socket not seen")
	}
}
