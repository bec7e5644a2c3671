package config

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

const secretsExample = `image = "x"

[[secrets]]
name = "anthropic"
source = "env:ANTHROPIC_API_KEY"
hosts = ["api.anthropic.com"]
header = "x-api-key: {}"
env = "ANTHROPIC_API_KEY"

[[secrets]]
name = "github"
source = "github-app"
hosts = ["github.com", "*.githubusercontent.com"]
basic_auth_user = "x-access-token"

[github]
app_id = 1
installation_id = 2
private_key_path = "/k.pem"
`

func TestSecretsArrayOfTables(t *testing.T) {
	opts, dir := hermetic(t)
	opts.ConfigPath = writeFile(t, filepath.Join(dir, "c.toml"), secretsExample)
	l := mustLoad(t, opts)
	want := []Secret{
		{Name: "anthropic", Source: "env:ANTHROPIC_API_KEY", Hosts: []string{"api.anthropic.com"}, Header: "x-api-key: {}", Env: "ANTHROPIC_API_KEY"},
		{Name: "github", Source: "github-app", Hosts: []string{"github.com", "*.githubusercontent.com"}, BasicAuthUser: "x-access-token"},
	}
	if !reflect.DeepEqual(l.Config.Secrets, want) {
		t.Fatalf("secrets = %+v", l.Config.Secrets)
	}
	if got := l.Origin("secrets[1].hosts"); got != opts.ConfigPath+":13" {
		t.Errorf("Origin(secrets[1].hosts) = %q", got)
	}
	if got := l.Origin("secrets[0]"); got != opts.ConfigPath+":3" {
		t.Errorf("Origin(secrets[0]) = %q", got)
	}
	// No secrets: nil, as Default.
	opts2, dir2 := hermetic(t)
	opts2.ConfigPath = writeFile(t, filepath.Join(dir2, "c.toml"), `image = "x"`)
	if s := mustLoad(t, opts2).Config.Secrets; s != nil {
		t.Fatalf("secrets without [[secrets]]: %v", s)
	}
}

// Every bad [[secrets]] entry gives one error that names its key.
func TestSecretsErrorsNameTheKey(t *testing.T) {
	entry := func(body string) string { return "[[secrets]]\n" + body + "\n" }
	good := `name = "a"
source = "env:A"
hosts = ["a.example.com"]
header = "Authorization: Bearer {}"`
	cases := []struct {
		name, file, key string
		reason          error
	}{
		{"no hosts", entry(good) + entry(`name = "b"
source = "env:B"
header = "x-api-key: {}"`), "secrets[1].hosts", errdefs.ErrMissingRequired},
		{"empty hosts", entry(strings.Replace(good, `["a.example.com"]`, `[]`, 1)), "secrets[0].hosts", errdefs.ErrMissingRequired},
		{"bad host", entry(strings.Replace(good, `"a.example.com"`, `"*.*"`, 1)), "secrets[0].hosts", errdefs.ErrInvalidValue},
		{"unknown source", entry(strings.Replace(good, `env:A`, `vault:A`, 1)), "secrets[0].source", errdefs.ErrInvalidValue},
		{"relative file", entry(strings.Replace(good, `env:A`, `file:key.txt`, 1)), "secrets[0].source", errdefs.ErrInvalidValue},
		{"github-app without app", entry(strings.Replace(good, `env:A`, `github-app`, 1)), "secrets[0].source", errdefs.ErrConflict},
		{"github-app as a header", "[github]\napp_id = 1\ninstallation_id = 2\nprivate_key_path = \"/k.pem\"\n" +
			entry(strings.Replace(good, `env:A`, `github-app`, 1)), "secrets[0].basic_auth_user", errdefs.ErrInvalidValue},
		{"no source", entry(strings.Replace(good, `source = "env:A"`, ``, 1)), "secrets[0].source", errdefs.ErrMissingRequired},
		{"template without {}", entry(strings.Replace(good, `Bearer {}`, `Bearer`, 1)), "secrets[0].header", errdefs.ErrInvalidValue},
		{"template two {}", entry(strings.Replace(good, `Bearer {}`, `{} {}`, 1)), "secrets[0].header", errdefs.ErrInvalidValue},
		{"bad header name", entry(strings.Replace(good, `Authorization:`, `Auth orization:`, 1)), "secrets[0].header", errdefs.ErrInvalidValue},
		{"managed header", entry(strings.Replace(good, `Authorization:`, `Host:`, 1)), "secrets[0].header", errdefs.ErrInvalidValue},
		{"no injection", entry(strings.Replace(good, `header = "Authorization: Bearer {}"`, ``, 1)), "secrets[0].header", errdefs.ErrMissingRequired},
		{"both injections", entry(good + "\nbasic_auth_user = \"x\""), "secrets[0].header", errdefs.ErrConflict},
		{"duplicate names", entry(good) + entry(strings.Replace(good, `env:A`, `env:B`, 1)), "secrets[1].name", errdefs.ErrConflict},
		{"bad name", entry(strings.Replace(good, `name = "a"`, `name = "A b"`, 1)), "secrets[0].name", errdefs.ErrInvalidValue},
		{"bad env", entry(good + "\nenv = \"1X\""), "secrets[0].env", errdefs.ErrInvalidValue},
		{"open mode", "[network]\nmode = \"open\"\n" + entry(good), "network.mode", errdefs.ErrConflict},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts, dir := hermetic(t)
			opts.ConfigPath = writeFile(t, filepath.Join(dir, "c.toml"), tc.file)
			_, err := Load(opts)
			var ce *errdefs.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Load = %v", err)
			}
			var all []*errdefs.ConfigError
			collect(err, &all)
			if len(all) != 1 || all[0].Key != tc.key || !errors.Is(all[0].Reason, tc.reason) {
				t.Fatalf("want one error for %s (%v), got %d: %v", tc.key, tc.reason, len(all), err)
			}
			if !strings.HasPrefix(all[0].Source, opts.ConfigPath) {
				t.Errorf("source %q", all[0].Source)
			}
		})
	}
}

func collect(err error, out *[]*errdefs.ConfigError) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			collect(e, out)
		}
		return
	}
	var ce *errdefs.ConfigError
	if errors.As(err, &ce) {
		*out = append(*out, ce)
	}
}

// Malformed [[secrets]] shapes fail at decoding, naming the key.
func TestSecretsDecodeErrors(t *testing.T) {
	for name, tc := range map[string]struct{ file, key string }{
		"single table":   {"[secrets]\nname = \"a\"\n", "secrets.name"},
		"not a table":    {"secrets = [\"a\"]\n", "secrets[0]"},
		"a string":       {"secrets = \"a\"\n", "secrets"},
		"unknown field":  {"[[secrets]]\nname = \"a\"\nvalue = \"sk-123\"\n", "secrets[0].value"},
		"hosts a string": {"[[secrets]]\nhosts = \"a.example.com\"\n", "secrets[0].hosts"},
		"name a number":  {"[[secrets]]\nname = 1\n", "secrets[0].name"},
	} {
		t.Run(name, func(t *testing.T) {
			opts, dir := hermetic(t)
			opts.ConfigPath = writeFile(t, filepath.Join(dir, "c.toml"), tc.file)
			_, err := Load(opts)
			var ce *errdefs.ConfigError
			if !errors.As(err, &ce) || ce.Key != tc.key {
				t.Fatalf("want an error for %s, got %v", tc.key, err)
			}
			if strings.Contains(err.Error(), "sk-123") {
				t.Fatal("a value in the error")
			}
		})
	}
}
