package kube

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzPlanUser: sandbox.user either maps to non-negative 32-bit ids that
// print back as the input's numbers, or is refused; root is uid 0 only.
func FuzzPlanUser(f *testing.F) {
	for _, s := range []string{"", "root", "0", "1000", "1000:2000", "agent", "1000:", ":1", "-1", "4294967296", "1000:staff", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		uid, gid, err := planUser(u)
		if err != nil {
			return
		}
		if uid < 0 || gid < 0 || uid > 1<<31-1 || gid > 1<<31-1 {
			t.Fatalf("%q: uid %d gid %d out of range", u, uid, gid)
		}
		switch u {
		case "":
			if uid != DefaultUID || gid != DefaultUID {
				t.Fatalf("empty user: %d:%d", uid, gid)
			}
			return
		case "root":
			return
		}
		us, gs, hasGroup := strings.Cut(u, ":")
		if n, _ := strconv.ParseInt(us, 10, 64); n != uid {
			t.Fatalf("%q: uid %d", u, uid)
		}
		if hasGroup {
			if n, _ := strconv.ParseInt(gs, 10, 64); n != gid {
				t.Fatalf("%q: gid %d", u, gid)
			}
		} else if gid != uid {
			t.Fatalf("%q: gid %d, want the uid", u, gid)
		}
	})
}

// FuzzSplitLines: every line passed on is one complete, non-empty line of
// the input, no longer than maxLogLine and without its newline, in order.
func FuzzSplitLines(f *testing.F) {
	for _, s := range []string{"", "\n", "a\nb\n", "a\n\nb", strings.Repeat("x", 5000) + "\ny\n", "{\"host\":\"a\"}\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var got []string
		if err := splitLines(strings.NewReader(in), func(l []byte) error { got = append(got, string(l)); return nil }); err != nil {
			t.Fatal(err)
		}
		var want []string
		lines := strings.Split(in, "\n")
		for _, l := range lines[:len(lines)-1] {
			if l != "" && len(l)+1 <= maxLogLine {
				want = append(want, l)
			}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) != len(want) {
			t.Fatalf("%q: got %q, want %q", in, got, want)
		}
	})
}
