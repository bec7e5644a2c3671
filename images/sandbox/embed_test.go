package sandboximage

import (
	"strings"
	"testing"
)

// TestContainerfileUsesNames keeps the constants and the embedded
// Containerfile in step: every name the builder relies on must appear in it.
func TestContainerfileUsesNames(t *testing.T) {
	text := string(Containerfile)
	tests := []struct {
		name string
		want string
	}{
		{"base argument with default", "ARG " + BaseArg + "=" + DefaultBase},
		{"base used by FROM", "FROM ${" + BaseArg + "}"},
		{"version argument", "ARG " + VersionArg},
		{"version label", "LABEL " + VersionLabel + `="${` + VersionArg + `}"`},
		{"askpass copied from context", "COPY " + AskpassContextName + " " + AskpassPath},
		{"askpass set for git", "ENV GIT_ASKPASS=" + AskpassPath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(text, tt.want) {
				t.Errorf("Containerfile does not contain %q", tt.want)
			}
		})
	}
}

// TestContainerfileClassicBuilder rejects syntax the classic builder, used
// through the Engine API on both engines, does not understand.
func TestContainerfileClassicBuilder(t *testing.T) {
	for _, bad := range []string{"--chmod", "--mount", "--link", "# syntax=", "<<"} {
		if strings.Contains(string(Containerfile), bad) {
			t.Errorf("Containerfile uses %q, which the classic builder rejects", bad)
		}
	}
}
