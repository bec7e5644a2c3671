package termsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text\n\tindented", "plain text\n\tindented"},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"title\x1b]0;pwned\x07", `title\x1b]0;pwned\x07`},
		{"csi\u009b2J", `csi\x9b2J`},
		{"raw\x9bbyte", `raw\x9bbyte`},
		{"bidi\u202eevil", `bidi\u202eevil`},
		{"cr\rover", `cr\x0dover`},
		{"del\x7f", `del\x7f`},
		{"héllo wörld ✓", "héllo wörld ✓"},
	}
	for _, c := range cases {
		if got := String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLine(t *testing.T) {
	if got := Line("a\nb\tc\x1b"); got != `a\nb\tc\x1b` {
		t.Errorf("Line = %q", got)
	}
}

// checkSafe fails when out holds anything a terminal could act on.
func checkSafe(t *testing.T, in, out string, allowNL bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("output of %q is not valid UTF-8: %q", in, out)
	}
	for _, r := range out {
		if (r == '\n' || r == '\t') && allowNL {
			continue
		}
		if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x2028 || r == 0x2029 {
			t.Fatalf("output of %q holds %U: %q", in, r, out)
		}
	}
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "a\x1b[2Jb", "\xff\xfe", "\u009b\u202e", "ok\n", "\x1b]52;c;AAAA\x07", strings.Repeat("\x00", 10)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := String(s)
		checkSafe(t, s, out, true)
		checkSafe(t, s, Line(s), false)
		if safe(s) && out != s {
			t.Fatalf("safe input %q changed to %q", s, out)
		}
		if String(out) != out {
			t.Fatalf("String is not idempotent on %q", s)
		}
	})
}
