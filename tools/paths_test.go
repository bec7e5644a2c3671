package tools

import (
	"strings"
	"testing"
)

func TestCleanPath(t *testing.T) {
	long := strings.Repeat("a", MaxSegmentChars+1)
	deep := strings.Repeat("d/", MaxPathSegments) + "f"
	tests := []struct {
		in        string
		allowRoot bool
		want      string
		reason    error
	}{
		{in: "a/b.txt", want: "a/b.txt"},
		{in: "./a//b/./c", want: "a/b/c"},
		{in: "/workspace/src/x.go", want: "src/x.go"},
		{in: "/workspace", allowRoot: true, want: "."},
		{in: "", allowRoot: true, want: "."},
		{in: ".", allowRoot: true, want: "."},
		{in: "", reason: reasonInvalid},
		{in: "/workspace", reason: reasonInvalid},
		{in: "../etc/passwd", reason: reasonRefused},
		{in: "a/../../b", reason: reasonRefused},
		{in: "a/..", reason: reasonRefused},
		{in: "/etc/passwd", reason: reasonRefused},
		{in: "/workspacefoo/x", reason: reasonRefused},
		{in: "caf\u00e9.txt", reason: reasonInvalid},
		{in: "a\nb", reason: reasonInvalid},
		{in: long, reason: reasonInvalid},
		{in: deep, reason: reasonInvalid},
		{in: strings.Repeat("d/", MaxPathSegments-1) + "f", want: strings.Repeat("d/", MaxPathSegments-1) + "f"},
	}
	for _, tt := range tests {
		got, err := CleanPath("ls", "path", tt.in, tt.allowRoot)
		if tt.reason != nil {
			wantToolError(t, err, tt.reason)
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"a/b", "../x", "/workspace/a", "/etc", "a//./b", "..", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := CleanPath("ls", "path", in, true)
		if err != nil {
			return
		}
		if strings.HasPrefix(got, "/") {
			t.Fatalf("%q cleaned to absolute %q", in, got)
		}
		segs := strings.Split(got, "/")
		if len(segs) > MaxPathSegments {
			t.Fatalf("%q cleaned to %d segments", in, len(segs))
		}
		for _, s := range segs {
			if s == ".." || s == "" || (s == "." && got != ".") || len(s) > MaxSegmentChars {
				t.Fatalf("%q cleaned to bad segment %q in %q", in, s, got)
			}
		}
		for i := 0; i < len(got); i++ {
			if got[i] < 0x20 || got[i] >= 0x7f {
				t.Fatalf("%q cleaned to non-printable %q", in, got)
			}
		}
	})
}
