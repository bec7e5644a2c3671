package workspace

import (
	"errors"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestParseRepo(t *testing.T) {
	tests := []struct {
		in      string
		want    Repo
		wantErr bool
	}{
		{in: "octocat/hello-world", want: Repo{"octocat", "hello-world"}},
		{in: "a/b", want: Repo{"a", "b"}},
		{in: "my-org/repo.name_1", want: Repo{"my-org", "repo.name_1"}},
		{in: "o/.github", want: Repo{"o", ".github"}},
		{in: "o/...", want: Repo{"o", "..."}},
		{in: strings.Repeat("a", 39) + "/" + strings.Repeat("b", 100), want: Repo{strings.Repeat("a", 39), strings.Repeat("b", 100)}},
		{in: "", wantErr: true},
		{in: "octocat", wantErr: true},
		{in: "/repo", wantErr: true},
		{in: "owner/", wantErr: true},
		{in: "a/b/c", wantErr: true},
		{in: " a/b", wantErr: true},
		{in: "a/b ", wantErr: true},
		{in: "a /b", wantErr: true},
		{in: "a/b\n", wantErr: true},
		{in: "-a/b", wantErr: true},
		{in: "a-/b", wantErr: true},
		{in: "a--b/c", wantErr: true},
		{in: "a_b/c", wantErr: true},
		{in: "a.b/c", wantErr: true},
		{in: strings.Repeat("a", 40) + "/b", wantErr: true},
		{in: "a/" + strings.Repeat("b", 101), wantErr: true},
		{in: "a/.", wantErr: true},
		{in: "a/..", wantErr: true},
		{in: "a/b.git", wantErr: true},
		{in: "a/b@c", wantErr: true},
		{in: "a/b%2f", wantErr: true},
		{in: "a/ü", wantErr: true},
		{in: "https://github.com/a/b", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRepo(tt.in)
			if tt.wantErr {
				var ce *errdefs.ConfigError
				if !errors.As(err, &ce) || ce.Key != "repo" || !errors.Is(err, errdefs.ErrInvalidValue) {
					t.Fatalf("ParseRepo(%q) error = %v, want ConfigError repo", tt.in, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseRepo(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			if got.String() != tt.in {
				t.Errorf("String() = %q", got.String())
			}
		})
	}
}

func FuzzParseRepo(f *testing.F) {
	for _, s := range []string{"octocat/hello-world", "a/b", "a/..", "-a/b", "a/b/c", "a/b.git", " a/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRepo(s)
		if err != nil {
			var ce *errdefs.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if r.String() != s {
			t.Fatalf("round trip %q -> %q", s, r.String())
		}
		if strings.ContainsAny(s, " \t\r\n@:?#%\\") || strings.Count(s, "/") != 1 ||
			r.Name == "." || r.Name == ".." || len(r.Owner) > 39 || len(r.Name) > 100 {
			t.Fatalf("accepted unsafe reference %q", s)
		}
		if _, err := CloneURL(r, ""); err != nil {
			t.Fatalf("accepted %q but CloneURL failed: %v", s, err)
		}
	})
}
