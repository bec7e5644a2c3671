//go:build !kubernetes

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/config"
)

func TestDoctorReportsCompanion(t *testing.T) {
	withCompanion := installDir(t)
	without := t.TempDir()
	if err := os.WriteFile(filepath.Join(without, "podbot"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, backend string
		want               podbot.CheckStatus
		wantIn             string
	}{
		{"found, engine backend", withCompanion, "", podbot.CheckOK, "backend engine"},
		{"found, kubernetes backend", withCompanion, config.BackendKubernetes, podbot.CheckOK, companionName + " at "},
		{"missing, engine backend", without, config.BackendEngine, podbot.CheckOK, "needed only for sandbox.backend = kubernetes"},
		{"missing, kubernetes backend", without, config.BackendKubernetes, podbot.CheckFail, "cannot be used"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _ := testIO()
			f := newFactory(ios, []string{"HOME=" + t.TempDir()})
			f.handOver.executable = func() (string, error) { return filepath.Join(tt.dir, "podbot"), nil }
			c := f.companionCheck(tt.backend)
			if c.Name != "kubernetes" || c.Status != tt.want || !strings.Contains(c.Detail, tt.wantIn) {
				t.Fatalf("check = %+v, want status %s and %q in the detail", c, tt.want, tt.wantIn)
			}
			if c.Status == podbot.CheckFail && !strings.Contains(c.Fix, "make build") {
				t.Errorf("fix %q does not say how to install the companion", c.Fix)
			}
		})
	}
}
