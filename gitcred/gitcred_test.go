package gitcred

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestParseOrigin(t *testing.T) {
	good := map[string]string{
		"https://github.com":            "https://github.com",
		"https://github.com/":           "https://github.com",
		"https://GitHub.COM/":           "https://github.com",
		"https://github.com:443/":       "https://github.com",
		"https://ghe.example:8443/git/": "https://ghe.example:8443",
		"http://10.88.0.1:39881/":       "http://10.88.0.1:39881",
		"http://gw:80/":                 "http://gw",
		"https://[::1]:8443/":           "https://[::1]:8443",
		"https://[0:0::1]/":             "https://[::1]",
	}
	for in, want := range good {
		o, err := ParseOrigin(in)
		if err != nil || o.String() != want {
			t.Errorf("ParseOrigin(%q) = %q, %v; want %q", in, o, err, want)
			continue
		}
		if back, err := ParseOrigin(o.String()); err != nil || back != o {
			t.Errorf("ParseOrigin(%q) does not read back: %v, %v", o.String(), back, err)
		}
	}
	for _, in := range []string{
		"", "github.com", "ftp://github.com/", "ssh://git@github.com/", "https://u:p@github.com/",
		"https://x-access-token@github.com/", "https://github.com./", "https://.github.com/",
		"https://github.com:0/", "https://github.com:65536/", "https://github.com:/", "https://github.com:0443/",
		"https://github.com/?q", "https://github.com/#f", "https://gith_ub.com/", "https://[fe80::1%25eth0]/",
		"https://[1.2.3.4]/", "https:github.com", "https:///x", "https://gïthub.com/",
	} {
		_, err := ParseOrigin(in)
		var ce *errdefs.ConfigError
		if !errors.As(err, &ce) || ce.Key != "github.clone_base_url" {
			t.Errorf("ParseOrigin(%q) = %v; want a github.clone_base_url ConfigError", in, err)
		}
	}
}

// promptCase is one prompt and whether podbot may answer it for the
// origins below.
type promptCase struct {
	name, prompt string
	want         string // "" refuses
}

const (
	userAnswer = Username
	tokAnswer  = "ghs_secret"
)

func promptCases() []promptCase {
	return []promptCase{
		{"username", "Username for 'https://github.com': ", userAnswer},
		{"password with user", "Password for 'https://x-access-token@github.com': ", tokAnswer},
		{"password without user", "Password for 'https://github.com': ", tokAnswer},
		{"host in upper case", "Username for 'https://GitHub.com': ", userAnswer},
		{"default port", "Password for 'https://x-access-token@github.com:443': ", tokAnswer},

		{"other host", "Username for 'https://attacker.example': ", ""},
		{"other host password", "Password for 'https://x-access-token@attacker.example': ", ""},
		{"allowed host as user info", "Password for 'https://github.com@attacker.example': ", ""},
		{"allowed host as user info, username", "Username for 'https://github.com@attacker.example': ", ""},
		{"user with allowed host in it", "Password for 'https://x-access-token@github.com@attacker.example': ", ""},
		{"host holding @", "Password for 'https://x-access-token@attacker.example@github.com': ", ""},
		{"empty user then host with @", "Password for 'https://@x-access-token@github.com': ", ""},
		{"other user", "Password for 'https://admin@github.com': ", ""},
		{"user in upper case", "Password for 'https://X-ACCESS-TOKEN@github.com': ", ""},
		{"empty user", "Password for 'https://@github.com': ", ""},
		{"user with password part", "Password for 'https://x-access-token:pw@github.com': ", ""},
		{"username asked with user", "Username for 'https://x-access-token@github.com': ", ""},
		{"http instead of https", "Password for 'http://x-access-token@github.com': ", ""},
		{"scheme in upper case", "Password for 'HTTPS://x-access-token@github.com': ", ""},
		{"other port", "Password for 'https://x-access-token@github.com:8443': ", ""},
		{"http default port", "Password for 'https://x-access-token@github.com:80': ", ""},
		{"zero-padded port", "Password for 'https://x-access-token@github.com:0443': ", ""},
		{"empty port", "Password for 'https://x-access-token@github.com:': ", ""},
		{"trailing dot", "Password for 'https://x-access-token@github.com.': ", ""},
		{"suffix host", "Password for 'https://x-access-token@github.com.attacker.example': ", ""},
		{"prefix host", "Password for 'https://x-access-token@evilgithub.com': ", ""},
		{"path", "Password for 'https://x-access-token@github.com/octo/demo.git': ", ""},
		{"empty path", "Password for 'https://x-access-token@github.com/': ", ""},
		{"ipv6 literal", "Password for 'https://x-access-token@[::1]': ", ""},
		{"ipv6 with port", "Password for 'https://x-access-token@[::1]:443': ", ""},
		{"percent-encoded host", "Password for 'https://x-access-token@github%2ecom': ", ""},
		{"backslash", "Password for 'https://x-access-token@github.com\\@attacker.example': ", ""},
		{"quote in host", "Password for 'https://x-access-token@github.com': ': ", ""},
		{"newline", "Password for 'https://x-access-token@github.com\n': ", ""},
		{"nul", "Password for 'https://x-access-token@github.com\x00': ", ""},
		{"missing suffix", "Password for 'https://x-access-token@github.com'", ""},
		{"missing space", "Password for 'https://x-access-token@github.com':", ""},
		{"lower-case kind", "password for 'https://x-access-token@github.com': ", ""},
		{"passphrase", "Enter passphrase for key '/root/.ssh/id_rsa': ", ""},
		{"no scheme", "Password for 'github.com': ", ""},
		{"empty scheme", "Password for '://github.com': ", ""},
		{"no host", "Password for 'https://': ", ""},
		{"no host with user", "Password for 'https://x-access-token@': ", ""},
		{"bare password", "Password: ", ""},
		{"empty", "", ""},
		{"garbage", "\xff\xfe garbage", ""},
		{"long", "Password for 'https://" + strings.Repeat("a", 5000) + "': ", ""},
	}
}

func TestAnswer(t *testing.T) {
	o, err := ParseOrigin("https://github.com/")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range promptCases() {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			got, err := Answer(o, tc.prompt, func() (string, error) { asked = true; return tokAnswer, nil })
			if got != tc.want {
				t.Fatalf("Answer(%q) = %q, %v; want %q", tc.prompt, got, err, tc.want)
			}
			if tc.want == "" {
				var re *RefusedError
				if !errors.As(err, &re) || !errors.Is(err, errdefs.ErrRefused) {
					t.Fatalf("error = %v; want a RefusedError", err)
				}
				if asked {
					t.Error("the token was read for a refused prompt")
				}
				if !strings.Contains(err.Error(), "https://github.com (github.clone_base_url)") {
					t.Errorf("error %q does not name the configured origin", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestAnswerNamesTheHostAskedFor(t *testing.T) {
	o, _ := ParseOrigin("https://github.com")
	_, err := Answer(o, "Password for 'https://x-access-token@attacker.example': ", nil)
	if err == nil || !strings.Contains(err.Error(), `"https://x-access-token@attacker.example"`) || !strings.Contains(err.Error(), "attacker.example") {
		t.Errorf("error = %v; want the host asked for", err)
	}
}

func TestAnswerOtherOrigins(t *testing.T) {
	tests := []struct {
		origin, prompt string
		ok             bool
	}{
		{"http://10.88.0.1:39881/", "Password for 'http://x-access-token@10.88.0.1:39881': ", true},
		{"http://10.88.0.1:39881/", "Password for 'http://x-access-token@10.88.0.1:39882': ", false},
		{"http://10.88.0.1:39881/", "Password for 'http://10.88.0.1@10.88.0.1:39882': ", false},
		{"http://10.88.0.1:39881/", "Password for 'https://x-access-token@10.88.0.1:39881': ", false},
		{"http://10.88.0.1:39881/", "Password for 'http://x-access-token@10.88.0.1': ", false},
		{"http://gw/", "Password for 'http://x-access-token@gw:80': ", true},
		{"https://[::1]:8443/", "Password for 'https://x-access-token@[::1]:8443': ", true},
		{"https://[::1]:8443/", "Password for 'https://x-access-token@[0:0:0:0:0:0:0:1]:8443': ", true},
		{"https://[::1]:8443/", "Password for 'https://x-access-token@[::2]:8443': ", false},
		{"https://[::1]:8443/", "Password for 'https://x-access-token@[::1]': ", false},
		{"https://[::1]:8443/", "Password for 'https://x-access-token@::1:8443': ", false},
	}
	for _, tt := range tests {
		o, err := ParseOrigin(tt.origin)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Answer(o, tt.prompt, func() (string, error) { return tokAnswer, nil })
		if (got == tokAnswer) != tt.ok {
			t.Errorf("origin %s, prompt %q: %q, %v; want answered %v", tt.origin, tt.prompt, got, err, tt.ok)
		}
	}
}

func TestZeroOriginRefusesEverything(t *testing.T) {
	for _, tc := range promptCases() {
		if got, err := Answer(Origin{}, tc.prompt, func() (string, error) { return tokAnswer, nil }); got != "" || err == nil {
			t.Errorf("the zero origin answered %q with %q", tc.prompt, got)
		}
	}
}

func TestReadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if o, err := ReadOrigin(write("o1", "https://github.com\n")); err != nil || o.String() != "https://github.com" {
		t.Errorf("ReadOrigin = %v, %v", o, err)
	}
	for _, bad := range []string{"", "\n", "https://GitHub.com\n", "https://github.com/\n", "https://github.com:443", "https://evil@github.com", strings.Repeat("a", 5000)} {
		if _, err := ReadOrigin(write("o2", bad)); !errors.Is(err, errdefs.ErrFilesystem) {
			t.Errorf("ReadOrigin(%q) = %v; want an error", bad, err)
		}
	}
	if _, err := ReadOrigin(filepath.Join(dir, "missing")); err == nil {
		t.Error("ReadOrigin of a missing file succeeded")
	}
	if tok, err := ReadToken(write("t1", "ghs_abc\nextra\n")); err != nil || tok != "ghs_abc" {
		t.Errorf("ReadToken = %q, %v", tok, err)
	}
	if _, err := ReadToken(write("t2", "")); err == nil {
		t.Error("ReadToken of an empty file succeeded")
	}
}

func TestPathsMatchTheTokenMount(t *testing.T) {
	if filepath.Dir(OriginPath) != SecretsDir || filepath.Dir(TokenPath) != SecretsDir {
		t.Errorf("OriginPath %s and TokenPath %s must live in %s", OriginPath, TokenPath, SecretsDir)
	}
}

// FuzzAnswer checks that whatever git (or an attacker) puts in a prompt,
// the token goes out only for a prompt that names the allowed origin
// exactly, with no user or x-access-token, and no path.
func FuzzAnswer(f *testing.F) {
	for _, tc := range promptCases() {
		f.Add(tc.prompt)
	}
	o, err := ParseOrigin("https://github.com:8443/")
	if err != nil {
		f.Fatal(err)
	}
	f.Add("Password for 'https://x-access-token@github.com:8443': ")
	f.Fuzz(func(t *testing.T, prompt string) {
		got, err := Answer(o, prompt, func() (string, error) { return tokAnswer, nil })
		if (got == "") == (err == nil) {
			t.Fatalf("Answer(%q) = %q, %v: exactly one of answer and error must be set", prompt, got, err)
		}
		if got != tokAnswer {
			return
		}
		allowed := map[string]bool{
			"Password for 'https://x-access-token@github.com:8443': ": true,
			"Password for 'https://github.com:8443': ":                true,
		}
		if !allowed[lowerHost(prompt)] {
			t.Fatalf("Answer gave the token for %q", prompt)
		}
	})
}

// lowerHost lowercases everything after the last '@' or "://", the part
// the origin compares without case.
func lowerHost(prompt string) string {
	i := strings.LastIndex(prompt, "@")
	if j := strings.Index(prompt, "://"); i < 0 && j >= 0 {
		i = j + 2
	}
	if i < 0 {
		return prompt
	}
	return prompt[:i+1] + strings.ToLower(prompt[i+1:])
}
