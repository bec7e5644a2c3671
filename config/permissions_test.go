package config

import (
	"maps"
	"path/filepath"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestTokenPermissionsDefault(t *testing.T) {
	opts, _ := hermetic(t)
	l := mustLoad(t, opts)
	if got := l.Config.GitHub.TokenPermissions; !maps.Equal(got, DefaultTokenPermissions()) {
		t.Errorf("default token permissions = %v", got)
	}
}

func TestTokenPermissionsFileAndEnv(t *testing.T) {
	opts, dir := hermetic(t)
	opts.ConfigPath = writeFile(t, filepath.Join(dir, "podbot.toml"), "[github.token_permissions]\ncontents = \"read\"\nissues = \"write\"\n")
	l := mustLoad(t, opts)
	if want := map[string]string{"contents": "read", "issues": "write"}; !maps.Equal(l.Config.GitHub.TokenPermissions, want) {
		t.Errorf("file token permissions = %v, want %v (the file's table replaces the default)", l.Config.GitHub.TokenPermissions, want)
	}
	opts.ConfigPath = writeFile(t, filepath.Join(dir, "inline.toml"), "[github]\ntoken_permissions = { metadata = \"read\" }\n")
	l = mustLoad(t, opts)
	if want := map[string]string{"metadata": "read"}; !maps.Equal(l.Config.GitHub.TokenPermissions, want) {
		t.Errorf("inline token permissions = %v, want %v", l.Config.GitHub.TokenPermissions, want)
	}
	opts.Environ = []string{"PODBOT_GITHUB_TOKEN_PERMISSIONS=contents=write, pull_requests=read"}
	l = mustLoad(t, opts)
	if want := map[string]string{"contents": "write", "pull_requests": "read"}; !maps.Equal(l.Config.GitHub.TokenPermissions, want) {
		t.Errorf("env token permissions = %v, want %v", l.Config.GitHub.TokenPermissions, want)
	}
}

func TestTokenPermissionsInvalid(t *testing.T) {
	opts, dir := hermetic(t)
	for name, tc := range map[string]struct {
		file, env string
		reason    error
		fragment  string
	}{
		"admin level":     {file: "[github.token_permissions]\ncontents = \"admin\"\n", reason: errdefs.ErrInvalidValue, fragment: `contents = admin`},
		"not a string":    {file: "[github.token_permissions]\ncontents = true\n", reason: errdefs.ErrInvalidValue, fragment: "entry contents"},
		"not a table":     {file: "[github]\ntoken_permissions = \"contents=write\"\n", reason: errdefs.ErrInvalidValue, fragment: "expected a table"},
		"bad name":        {file: "[github.token_permissions]\nContents = \"write\"\n", reason: errdefs.ErrInvalidValue, fragment: `"Contents"`},
		"nested":          {file: "[github.token_permissions.contents]\nlevel = \"write\"\n", reason: errdefs.ErrInvalidValue, fragment: "contents.level"},
		"empty env":       {env: "PODBOT_GITHUB_TOKEN_PERMISSIONS=,", reason: errdefs.ErrMissingRequired, fragment: "no permissions"},
		"env not a pair":  {env: "PODBOT_GITHUB_TOKEN_PERMISSIONS=contents", reason: errdefs.ErrInvalidValue, fragment: "NAME=VALUE"},
		"env twice":       {env: "PODBOT_GITHUB_TOKEN_PERMISSIONS=contents=read,contents=write", reason: errdefs.ErrInvalidValue, fragment: "twice"},
		"env empty level": {env: "PODBOT_GITHUB_TOKEN_PERMISSIONS=contents=", reason: errdefs.ErrInvalidValue, fragment: "read"},
	} {
		t.Run(name, func(t *testing.T) {
			o := opts
			o.ConfigPath, o.Environ = "", nil
			if tc.file != "" {
				o.ConfigPath = writeFile(t, filepath.Join(dir, name+".toml"), tc.file)
			}
			if tc.env != "" {
				o.Environ = []string{tc.env}
			}
			_, err := Load(o)
			configErr(t, err, "github.token_permissions", tc.reason, tc.fragment)
		})
	}
}
