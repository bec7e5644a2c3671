package launchplan

import (
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestSocketGuard(t *testing.T) {
	// /var/run is a symlink to /run on most hosts; the caller passes both the
	// configured and the resolved socket path.
	guarded := []string{"/var/run/docker.sock", "/run/docker.sock", "/run/user/1000/podman/podman.sock"}
	tests := []struct {
		name    string
		source  string
		refused bool
	}{
		{name: "the socket itself", source: "/run/user/1000/podman/podman.sock", refused: true},
		{name: "the socket's directory", source: "/run/user/1000/podman", refused: true},
		{name: "a parent directory", source: "/run/user/1000", refused: true},
		{name: "a far ancestor", source: "/run", refused: true},
		{name: "the configured symlinked path", source: "/var/run", refused: true},
		{name: "resolved form of a symlinked path", source: "/run/docker.sock", refused: true},
		{name: "unrelated directory", source: "/home/u/src", refused: false},
		{name: "sibling in a shared socket directory", source: "/run/user/1000/podbot/c1", refused: false},
		{name: "name sharing a prefix", source: "/run/user/1000/podman-other", refused: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Plan
			err := p.Apply(WithSocketGuard(guarded...), WithWorkspaceMount(tt.source, "/workspace"))
			if !tt.refused {
				if err != nil {
					t.Fatalf("mount of %s refused: %v", tt.source, err)
				}
				return
			}
			wantConfigError(t, err, "workspace.host_path", errdefs.ErrRefused)
		})
	}
}

func TestSocketGuardDirectoryEntryGuardsBelow(t *testing.T) {
	var p Plan
	err := p.Apply(WithSocketGuard("/srv/engine"), WithWorkspaceMount("/srv/engine/sub", "/workspace"))
	wantConfigError(t, err, "workspace.host_path", errdefs.ErrRefused)
}

func TestSocketGuardChecksEarlierMounts(t *testing.T) {
	// Mounts added before the guard, and mounts added by a later Apply, are
	// both checked.
	var p Plan
	err := p.Apply(WithTokenMount("/run/podman/ghapp_token"), WithSocketGuard("/run/podman/podman.sock"))
	wantConfigError(t, err, "token_file", errdefs.ErrRefused)

	var q Plan
	if err := q.Apply(WithSocketGuard("/run/podman/podman.sock")); err != nil {
		t.Fatal(err)
	}
	q.Mounts = append(q.Mounts, Mount{Source: "/run", Target: "/host-run"})
	wantConfigError(t, q.Apply(), "engine_socket", errdefs.ErrRefused)
}

func TestSocketGuardRejectsRelativePath(t *testing.T) {
	_, err := applyOne(t, WithSocketGuard("docker.sock"))
	wantConfigError(t, err, "engine_socket", errdefs.ErrInvalidValue)
}
