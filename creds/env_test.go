package creds

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestPassthrough(t *testing.T) {
	environ := []string{"API_KEY=sk-secret-123", "EMPTY=", "LANG=C.UTF-8", "DUP=first", "DUP=second", "noequals", "=bad"}
	tests := []struct {
		name                string
		allow, required     []string
		wantEnv, wantSecret []string
		wantKey             string
		wantReason          error
	}{
		{name: "copies allowlisted in order", allow: []string{"LANG", "API_KEY"},
			wantEnv: []string{"LANG=C.UTF-8", "API_KEY=sk-secret-123"}, wantSecret: []string{"C.UTF-8", "sk-secret-123"}},
		{name: "missing skipped", allow: []string{"NOPE", "API_KEY"},
			wantEnv: []string{"API_KEY=sk-secret-123"}, wantSecret: []string{"sk-secret-123"}},
		{name: "empty value kept, not a secret", allow: []string{"EMPTY"}, wantEnv: []string{"EMPTY="}},
		{name: "first occurrence wins", allow: []string{"DUP"}, wantEnv: []string{"DUP=first"}, wantSecret: []string{"first"}},
		{name: "duplicates listed once", allow: []string{"LANG", "LANG"}, wantEnv: []string{"LANG=C.UTF-8"}, wantSecret: []string{"C.UTF-8"}},
		{name: "required present", allow: []string{"LANG"}, required: []string{"API_KEY"},
			wantEnv: []string{"LANG=C.UTF-8", "API_KEY=sk-secret-123"}, wantSecret: []string{"C.UTF-8", "sk-secret-123"}},
		{name: "required missing", allow: []string{"LANG"}, required: []string{"NOPE"}, wantKey: "agent.env_required", wantReason: errdefs.ErrMissingRequired},
		{name: "required and allowlisted missing", allow: []string{"NOPE"}, required: []string{"NOPE"}, wantKey: "agent.env_required", wantReason: errdefs.ErrMissingRequired},
		{name: "invalid name", allow: []string{"BAD-NAME"}, wantKey: "agent.env_allowlist", wantReason: errdefs.ErrInvalidValue},
		{name: "leading digit", allow: []string{"1X"}, wantKey: "agent.env_allowlist", wantReason: errdefs.ErrInvalidValue},
		{name: "name with equals", allow: []string{"A=B"}, wantKey: "agent.env_allowlist", wantReason: errdefs.ErrInvalidValue},
		{name: "empty name", required: []string{""}, wantKey: "agent.env_required", wantReason: errdefs.ErrInvalidValue},
		{name: "engine socket refused", allow: []string{"DOCKER_HOST"}, wantKey: "agent.env_allowlist", wantReason: errdefs.ErrRefused},
		{name: "podman socket refused", required: []string{"CONTAINER_HOST"}, wantKey: "agent.env_required", wantReason: errdefs.ErrRefused},
		{name: "nothing", wantEnv: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, secrets, err := Passthrough(tt.allow, tt.required, environ)
			if tt.wantKey != "" {
				var ce *errdefs.ConfigError
				if !errors.As(err, &ce) || ce.Key != tt.wantKey || !errors.Is(err, tt.wantReason) {
					t.Fatalf("Passthrough error = %v, want %s / %v", err, tt.wantKey, tt.wantReason)
				}
				if strings.Contains(err.Error(), "sk-secret-123") {
					t.Error("error leaks a value")
				}
				if env != nil || secrets != nil {
					t.Error("a failed passthrough returned values")
				}
				return
			}
			if err != nil {
				t.Fatalf("Passthrough: %v", err)
			}
			if !slices.Equal(env, tt.wantEnv) || !slices.Equal(secrets, tt.wantSecret) {
				t.Errorf("Passthrough = %q, %q; want %q, %q", env, secrets, tt.wantEnv, tt.wantSecret)
			}
		})
	}
}
