package engine

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// secretEndpoints carry the password "S3cretPw" (or the token "S3cretTok")
// in the userinfo of an endpoint, in every shape a parse error can take.
var secretEndpoints = []string{
	"tcp://user:S3cretPw@host:2376",
	"https://user:S3cretPw@host",
	"http://user:S3cretPw@host:2375/base",
	"https://S3cretTok@host",
	"ssh://user:S3cretPw@host",
	"tcp://user:S3cretPw@host:2376?x=1",
	"http://user:S3cretPw@[::1",
	"tcp://user:S3cretPw@host:port",
	"tcp://user:S3cretPw@" + strings.Repeat("h", 300) + ":2376",
	"tcp://user:" + strings.Repeat("S3cretPw", 40) + "@host:2376",
	"tcp://user:S3cret/Pw@host:2376",
	"TCP://user:S3cretPw@host:2376",
	"  tcp://user:S3cretPw@host:2376\n",
}

func leaksSecret(s string) bool {
	return strings.Contains(s, "S3cret")
}

// TestEndpointErrorsNeverEchoUserinfo plays a user whose endpoint carries
// a password: no error podbot makes from it may repeat the password.
func TestEndpointErrorsNeverEchoUserinfo(t *testing.T) {
	for _, raw := range secretEndpoints {
		_, err := ParseEndpoint(raw)
		if err == nil {
			t.Errorf("ParseEndpoint(%q) accepted credentials", raw)
			continue
		}
		if leaksSecret(err.Error()) {
			t.Errorf("ParseEndpoint(%q) error leaks the secret: %v", raw, err)
		}
		_, _, err = Resolve(ResolveInput{Flag: raw})
		if err == nil || leaksSecret(err.Error()) {
			t.Errorf("Resolve(%q) error leaks the secret: %v", raw, err)
		}
		_, err = Connect(t.Context(), Endpoint{Raw: raw})
		if err == nil || leaksSecret(err.Error()) {
			t.Errorf("Connect(%q) error leaks the secret: %v", raw, err)
		}
	}
}

// TestEndpointFormattingHidesUserinfo checks every way an Endpoint value
// can be printed: String, %v, %+v, %#v and slog's text and JSON handlers.
func TestEndpointFormattingHidesUserinfo(t *testing.T) {
	ep := Endpoint{Raw: "tcp://user:S3cretPw@host:2376"}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "endpoint", ep)
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "endpoint", ep)
	for _, s := range []string{ep.String(), fmt.Sprintf("%v", ep), fmt.Sprintf("%+v", ep), fmt.Sprintf("%#v", ep), fmt.Sprint(&ep), buf.String()} {
		if leaksSecret(s) {
			t.Errorf("formatted endpoint leaks the secret: %s", s)
		}
	}
	if got := ep.String(); got != "tcp://user:xxxxx@host:2376" {
		t.Errorf("String() = %q, want the user kept and the password masked", got)
	}
}

func TestRedactUserinfo(t *testing.T) {
	cases := map[string]string{
		"tcp://user:pw@host:2376":       "tcp://user:xxxxx@host:2376",
		"https://user:pw@host":          "https://user:xxxxx@host",
		"https://token@host/p":          "https://xxxxx@host/p",
		"tcp://u:p/w@host":              "tcp://u:xxxxx@host",
		"tcp://host:2376":               "tcp://host:2376",
		"unix:///run/a@b.sock":          "unix:///run/a@b.sock",
		"unix://@abstract":              "unix://@abstract",
		"/run/podman/podman.sock":       "/run/podman/podman.sock",
		"npipe:////./pipe/docker@x":     "npipe:////./pipe/docker@x",
		"ssh://core:pw@host/run/p.sock": "ssh://core:xxxxx@host/run/p.sock",
	}
	for in, want := range cases {
		if got := RedactEndpoint(in); got != want {
			t.Errorf("RedactEndpoint(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzRedactEndpoint(f *testing.F) {
	for _, s := range secretEndpoints {
		f.Add(s, "S3cretPw")
	}
	f.Fuzz(func(t *testing.T, pre, pw string) {
		// A marker no error prose holds, so a hit is the password itself.
		pw = "Q7z" + pw
		if strings.ContainsAny(pw, "@") {
			return
		}
		raw := "tcp://" + pre + ":" + pw + "@host:1"
		if strings.ContainsAny(pre, ":@") || strings.Contains("tcp://"+pre+":", pw) || strings.Contains("xxxxx@host:1", pw) {
			return
		}
		if got := RedactEndpoint(raw); strings.Contains(got, pw) {
			t.Fatalf("RedactEndpoint(%q) = %q keeps the password", raw, got)
		}
		if _, err := ParseEndpoint(raw); err != nil && strings.Contains(err.Error(), pw) {
			t.Fatalf("ParseEndpoint(%q) error %v keeps the password", raw, err)
		}
	})
}

func TestParsedEndpointStringKeepsPath(t *testing.T) {
	ep, err := ParseEndpoint("http://host:2375/base@v1")
	if err != nil {
		t.Fatal(err)
	}
	if got := ep.String(); got != "http://host:2375/base@v1" {
		t.Errorf("String() = %q", got)
	}
	if got := (Endpoint{Scheme: SchemeHTTP, Address: "u:S3cretPw@h"}).String(); leaksSecret(got) {
		t.Errorf("hand-made endpoint String() = %q", got)
	}
}
