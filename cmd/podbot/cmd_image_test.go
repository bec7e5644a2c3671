package main

import (
	"context"
	"errors"
	"testing"
)

// TestImageBuildGooseFlags: the Goose flags go together and with --agents,
// and are refused before any engine is contacted.
func TestImageBuildGooseFlags(t *testing.T) {
	for _, args := range [][]string{
		{"build", "--agents", "opencode", "--goose-artifact", "goose.tar.bz2"},
		{"build", "--agents", "none", "--goose-sha256", "00", "--goose-version", "1"},
		{"build", "--goose-artifact", "g", "--goose-sha256", "00", "--goose-version", "1"},
		{"build", "--tag", "localhost/x:1"},
	} {
		ios, _, _ := testIO()
		cmd := newImageCmd(newFactory(ios, nil))
		cmd.SetArgs(args)
		cmd.SetOut(ios.ErrOut)
		cmd.SetErr(ios.ErrOut)
		var ue *usageError
		if err := cmd.ExecuteContext(context.Background()); !errors.As(err, &ue) {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
}
