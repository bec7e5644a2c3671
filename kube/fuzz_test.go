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
