package engine

import (
	"errors"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestParseEndpoint(t *testing.T) {
	cases := []struct {
		in, scheme, addr, str string
	}{
		{"unix:///run/podman/podman.sock", SchemeUnix, "/run/podman/podman.sock", "unix:///run/podman/podman.sock"},
		{"UNIX:///var/run/docker.sock", SchemeUnix, "/var/run/docker.sock", "unix:///var/run/docker.sock"},
		{"Unix:///x.sock", SchemeUnix, "/x.sock", "unix:///x.sock"},
		{"npipe:////./pipe/docker_engine", SchemeNpipe, "//./pipe/docker_engine", "npipe:////./pipe/docker_engine"},
		{"NPipe:////./pipe/podman", SchemeNpipe, "//./pipe/podman", "npipe:////./pipe/podman"},
		{"tcp://127.0.0.1:2375", SchemeHTTP, "127.0.0.1:2375", "http://127.0.0.1:2375"},
		{"TCP://engine.local:2375", SchemeHTTP, "engine.local:2375", "http://engine.local:2375"},
		{"http://localhost:8080", SchemeHTTP, "localhost:8080", "http://localhost:8080"},
		{"HtTp://localhost:8080/", SchemeHTTP, "localhost:8080", "http://localhost:8080"},
		{"https://engine.example:2376", SchemeHTTPS, "engine.example:2376", "https://engine.example:2376"},
		{"HTTPS://[::1]:2376", SchemeHTTPS, "[::1]:2376", "https://[::1]:2376"},
		{"tcp://host:2375/base", SchemeHTTP, "host:2375/base", "http://host:2375/base"},
		{"/run/podman/podman.sock", SchemeUnix, "/run/podman/podman.sock", "unix:///run/podman/podman.sock"},
		{"  /var/run/docker.sock  ", SchemeUnix, "/var/run/docker.sock", "unix:///var/run/docker.sock"},
		{"relative/engine.sock", SchemeUnix, "relative/engine.sock", "unix://relative/engine.sock"},
		{`\\.\pipe\docker_engine`, SchemeNpipe, `\\.\pipe\docker_engine`, `npipe://\\.\pipe\docker_engine`},
		{"//./pipe/docker_engine", SchemeNpipe, "//./pipe/docker_engine", "npipe:////./pipe/docker_engine"},
		{"//some/path", SchemeNpipe, "//some/path", "npipe:////some/path"},
		{`C:\sock`, SchemeUnix, `C:\sock`, `unix://C:\sock`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			ep, err := ParseEndpoint(tc.in)
			if err != nil {
				t.Fatalf("ParseEndpoint(%q): %v", tc.in, err)
			}
			if ep.Scheme != tc.scheme || ep.Address != tc.addr || ep.Raw != tc.in {
				t.Errorf("got %+v, want scheme %q address %q raw %q", ep, tc.scheme, tc.addr, tc.in)
			}
			if got := ep.String(); got != tc.str {
				t.Errorf("String() = %q, want %q", got, tc.str)
			}
			again, err := ParseEndpoint(ep.String())
			if err != nil || again.Scheme != ep.Scheme || again.Address != ep.Address {
				t.Errorf("round trip of %q gave %+v, %v", ep.String(), again, err)
			}
		})
	}
}

func TestParseEndpointErrors(t *testing.T) {
	cases := []struct {
		in     string
		reason error
	}{
		{"", errdefs.ErrMissingRequired},
		{"   ", errdefs.ErrMissingRequired},
		{"ssh://user@host", errdefs.ErrInvalidValue},
		{"ftp://host/sock", errdefs.ErrInvalidValue},
		{"FOO://bar", errdefs.ErrInvalidValue},
		{"docker://x", errdefs.ErrInvalidValue},
		{"unix://", errdefs.ErrInvalidValue},
		{"npipe://", errdefs.ErrInvalidValue},
		{"tcp://", errdefs.ErrInvalidValue},
		{"https://:2376", errdefs.ErrInvalidValue},
		{"http://user:secret@host:2375", errdefs.ErrInvalidValue},
		{"tcp://host:port", errdefs.ErrInvalidValue},
		{"http://host:2375/?x=1", errdefs.ErrInvalidValue},
		{"unix:/run/x.sock", errdefs.ErrInvalidValue},
		{"tcp:host:2375", errdefs.ErrInvalidValue},
		{"/run/x\x00.sock", errdefs.ErrInvalidValue},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			ep, err := ParseEndpoint(tc.in)
			if err == nil {
				t.Fatalf("ParseEndpoint(%q) = %+v, want error", tc.in, ep)
			}
			var ce *errdefs.ConfigError
			if !errors.As(err, &ce) || ce.Key != "engine_socket" {
				t.Fatalf("error %v is not a ConfigError for engine_socket", err)
			}
			if !errors.Is(err, tc.reason) {
				t.Errorf("error %v: want reason %v", err, tc.reason)
			}
		})
	}
}

func TestParseEndpointNeverEchoesSecrets(t *testing.T) {
	_, err := ParseEndpoint("http://user:hunter2@host:2375")
	if err == nil {
		t.Fatal("want error")
	}
	// The raw value is quoted so the user sees what was wrong; the message
	// must say why it was refused.
	if got := err.Error(); !contains(got, "credentials") {
		t.Errorf("message %q does not say credentials are refused", got)
	}
}

func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{"unix:///a", "npipe:////./pipe/x", "tcp://h:1", "http://h", "https://h:2/p", "/a/b", `\\.\pipe\x`, "//x", "x:y", "ssh://h", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ep, err := ParseEndpoint(s)
		if err != nil {
			var ce *errdefs.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		switch ep.Scheme {
		case SchemeUnix, SchemeNpipe, SchemeHTTP, SchemeHTTPS:
		default:
			t.Fatalf("scheme %q for %q", ep.Scheme, s)
		}
		if ep.Address == "" {
			t.Fatalf("empty address for %q", s)
		}
		again, err := ParseEndpoint(ep.String())
		if err != nil {
			t.Fatalf("String() %q of %q does not parse: %v", ep.String(), s, err)
		}
		if again.Scheme != ep.Scheme || again.Address != ep.Address {
			t.Fatalf("round trip %q -> %+v -> %+v", s, ep, again)
		}
	})
}
